"""``GET /api/changes``: the change feed, with long polling."""
from __future__ import annotations

import time
from typing import Any

from flask import Blueprint, Response, current_app, jsonify

from labapp.changefeed import feed
from labapp.changefeed.schemas import ChangePageSchema, ChangesQuerySchema
from labapp.db import transaction
from labapp.web.endpoints import endpoint
from labapp.web.loader import current_actor
from labapp.web.units import opens_own_units

bp = Blueprint("change_api", __name__, url_prefix="/api")
# Seconds between two looks at the end of the log while a long poll waits.
LOOK_EVERY = 0.2


@bp.get("/changes")
@endpoint("The changes after a cursor that the caller may read, oldest first, and the "
          "cursor to read on from; `wait` holds the request open until a change comes "
          "(long polling). 410 `cursor_expired` when the changes after the cursor are no "
          "longer kept: read the current state again.",
          query=ChangesQuerySchema, responses={200: ChangePageSchema}, problems=(410,))
@opens_own_units
def list_changes(query: dict[str, Any]) -> Response:
    actor = current_actor()
    if query["after"] is None:
        with transaction():
            return jsonify({"data": [], "next": feed.cursor_text(actor, feed.current_cursor())})
    after = feed.cursor_position(actor, query["after"])
    wait = min(query["wait"], current_app.config["LABAPP"]["CHANGES_MAX_WAIT"])
    deadline = time.monotonic() + wait
    while True:
        # A unit per look: a waiting request holds no snapshot and no connection.
        with transaction():
            page = feed.read_page(actor, after, query["top"], query["expand"] == "entity")
        if page.changes or time.monotonic() >= deadline:
            return jsonify({"data": page.changes, "next": feed.cursor_text(actor, page.next)})
        after = page.next
        _wait_for_change(after, deadline)


def _wait_for_change(after: int, deadline: float) -> None:
    """Return once the log has a change after ``after``, or at ``deadline``."""
    while time.monotonic() < deadline:
        with transaction():
            if feed.current_cursor() > after:
                return
        time.sleep(min(LOOK_EVERY, max(0.0, deadline - time.monotonic())))
