"""The "Data feeds" page: every view a user can read, its columns, a live preview of its first
rows, the feed URL to copy into Excel or Power BI, and a button that makes a personal access
token for the BI tool (shown once)."""
from __future__ import annotations

from flask import Blueprint, Response, abort, request, url_for

from labapp.auth import pats
from labapp.db import transaction
from labapp.errors import InvalidInput
from labapp.odata.feed import open_feed
from labapp.odata.metadata import edm_type, feed_views
from labapp.odata.options import FeedOptions
from labapp.query.dbviews import find_view
from labapp.web.blocks import render_page
from labapp.web.loader import current_actor
from labapp.web.pages import members_only

PREVIEW_ROWS = 10
PAT_NAME = "BI tool (Excel, Power BI)"
TEMPLATE = "odata/feeds.html"

bp = members_only(Blueprint("odata_views", __name__, url_prefix="/feeds"))


def _feed_root() -> str:
    return url_for("odata.service", _external=True).rstrip("/")


@bp.get("")
def index() -> Response:
    """The views with their columns and feed URLs."""
    views = [{"name": view.name, "description": view.description,
              "columns": [(column.name, edm_type(column).removeprefix("Edm."))
                          for column in view.columns]} for view in feed_views()]
    return render_page(TEMPLATE, views=views, feed_root=_feed_root(), created=None,
                       pat_error=None, username=current_actor().user_id)


@bp.get("/<name>/preview")
def preview(name: str) -> Response:
    """The first rows of one view the user may read (the block ``preview``)."""
    view = find_view(name)
    if view is None:
        abort(404)
    feed = open_feed(current_actor(), view, FeedOptions(top=PREVIEW_ROWS),
                     page_size=PREVIEW_ROWS)
    return render_page(TEMPLATE, block="preview", view=view, names=feed.names,
                       rows=feed.read())


@bp.post("/pat")
def create_pat() -> Response:
    """A personal access token for a BI tool, its value shown this once (block ``pat``)."""
    actor = current_actor()
    name = request.form.get("name", "").strip() or PAT_NAME
    try:
        with transaction():
            created = pats.create(actor, name[:255], None)
    except InvalidInput as error:
        return render_page(TEMPLATE, block="pat", status=400, created=None,
                           pat_error=error.detail, username=actor.user_id)
    return render_page(TEMPLATE, block="pat", status=201, created=created, pat_error=None,
                       username=actor.user_id)
