"""The "Data feeds" page: every view a user can read, its columns, a live preview of its first
rows, the feed URL to copy into Excel or Power BI, and a button that makes a personal access
token for the BI tool (shown once)."""
from __future__ import annotations

from flask import Blueprint, Response, abort, redirect, request, url_for
from werkzeug.wrappers import Response as BaseResponse

from labapp.auth import pats
from labapp.errors import InvalidInput
from labapp.odata.feed import open_feed
from labapp.odata.metadata import edm_type, feed_views
from labapp.odata.options import FeedOptions
from labapp.query.dbviews import find_view
from labapp.web.blocks import is_htmx, render_page
from labapp.web.loader import current_actor
from labapp.web.pages import members_only

PREVIEW_ROWS = 10
PAT_NAME = "BI tool (Excel, Power BI)"
TEMPLATE = "odata/feeds.html"

bp = members_only(Blueprint("odata_views", __name__, url_prefix="/feeds"))


def _feed_root() -> str:
    return url_for("odata.service", _external=True).rstrip("/")


def _page(*, block: str | None = None, status: int = 200,
          created: pats.CreatedToken | None = None, pat_error: str | None = None) -> Response:
    """The page (or its block ``pat``): the views with their columns and feed URLs."""
    views = [{"name": view.name, "description": view.description,
              "columns": [(column.name, edm_type(column).removeprefix("Edm."))
                          for column in view.columns]} for view in feed_views()]
    return render_page(TEMPLATE, block=block, status=status, views=views,
                       feed_root=_feed_root(), created=created, pat_error=pat_error,
                       username=current_actor().user_id)


@bp.get("")
def index() -> Response:
    """The views with their columns and feed URLs."""
    return _page()


@bp.get("/<name>/preview")
def preview(name: str) -> BaseResponse:
    """The first rows of one view the user may read (the block ``preview``, which htmx
    asks for); a plain request goes to the view on the page."""
    view = find_view(name)
    if view is None:
        abort(404)
    if not is_htmx():
        response = redirect(url_for(".index", _anchor=f"feed-{view.name}"), 303)
        response.vary.add("HX-Request")
        return response
    feed = open_feed(current_actor(), view, FeedOptions(top=PREVIEW_ROWS),
                     page_size=PREVIEW_ROWS)
    return render_page(TEMPLATE, block="preview", view=view, names=feed.names,
                       rows=feed.read())


@bp.post("/pat")
def create_pat() -> Response:
    """A personal access token for a BI tool, its value shown this once (block ``pat``; the
    whole page for a form posted without htmx)."""
    actor = current_actor()
    name = request.form.get("name", "").strip() or PAT_NAME
    try:
        created = pats.create(actor, name[:255], None)
    except InvalidInput as error:
        return _page(block="pat", status=400, pat_error=error.detail)
    return _page(block="pat", status=201, created=created)
