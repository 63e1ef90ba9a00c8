"""The exports page (ADMIN on-premises): the list with Download links, a Save button that
starts an export in the background, and its progress polled by htmx."""
from __future__ import annotations

from flask import Blueprint, Response, current_app, redirect, url_for
from werkzeug.wrappers import Response as BaseResponse

from labapp.access.actor import ADMIN_ON_PREMISES
from labapp.blobs import content_of
from labapp.db import db
from labapp.exports import progress, service
from labapp.web.blocks import is_htmx, render_page
from labapp.web.loader import current_actor
from labapp.web.pages import members_only, require

bp = members_only(Blueprint("export_views", __name__, url_prefix="/admin/exports"))

PAGE = "sync/exports.html"
POLL_SECONDS = 1


@bp.before_request
def _admins_only() -> None:
    require(current_actor(), (ADMIN_ON_PREMISES,))


def _instance() -> str:
    path: str = current_app.config["LABAPP"]["INSTANCE_PATH"]
    return path


def _page(block: str | None = None) -> Response:
    state = progress.read_state(_instance())
    running = progress.is_running(state) or progress.locked(db.engine)  # here, or elsewhere
    return render_page(PAGE, block=block, exports=service.list_exports(_instance()),
                       state=state, running=running, poll=POLL_SECONDS)


@bp.get("")
def index() -> Response:
    """The exports of the sync/ folder and the state of the latest background export."""
    return _page()


@bp.get("/progress")
def status() -> Response:
    """Block ``exports``: the progress while an export runs, then the list (htmx polls)."""
    return _page("exports")


@bp.post("/save")
def save() -> BaseResponse:
    """Start an export in the background (unless one is running)."""
    # Flask types current_app as the Flask it proxies; the proxy's own method is untyped.
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    instance = _instance()

    def work(report: service.Progress) -> service.ExportResult:
        with app.app_context():
            return service.save_export(db.engine, instance, content_of, report)

    progress.start(instance, work, db.engine)
    return _page("exports") if is_htmx() else redirect(url_for("export_views.index"), 303)
