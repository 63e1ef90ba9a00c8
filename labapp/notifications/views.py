"""The notification centre: the bell in the top bar (its count polled by htmx), the list
with mark-as-read and mark-all, and opening a notification's subject."""
from __future__ import annotations

from flask import Blueprint, Response, redirect, url_for
from werkzeug.wrappers import Response as BaseResponse

from labapp.notifications import service
from labapp.web.blocks import is_htmx, render_block, render_page
from labapp.web.loader import current_actor
from labapp.web.pages import members_only
from labapp.web.units import writes

bp = members_only(Blueprint("notification_views", __name__, url_prefix="/notifications"))

PAGE = "notifications/list.html"
POLL_SECONDS = 30


def subject_url(kind_class: str | None, subject_id: str | None) -> str | None:
    """Where a notification's subject is shown: a dashboard, an alert rule, a webhook or an
    entity page."""
    if not subject_id or not kind_class:
        return None
    if kind_class == "Dashboard":
        return url_for("dashboard_views.show", dashboard_id=subject_id)
    if kind_class == "AlertRule":
        return url_for("alert_views.items", rule_id=subject_id)
    if kind_class == "Webhook":
        return url_for("webhook_views.show", hook_id=subject_id)
    return url_for("entity_views.detail", eclass=kind_class, entity_id=subject_id)


def _list(block: str | None = None) -> Response:
    actor = current_actor()
    rows = [service.to_api(row) for row in service.recent(actor)]
    count = service.unread_count(actor)
    return render_page(PAGE, block=block, notifications=rows, count=count,
                       poll=POLL_SECONDS)


@bp.get("")
def index() -> Response:
    """The user's latest notifications, unread first in weight, newest first in order."""
    return _list()


@bp.get("/bell")
def bell() -> Response:
    """The bell's unread count (block ``bell``), polled by every page."""
    actor = current_actor()
    count = service.unread_count(actor)
    return Response(render_block(PAGE, "bell", count=count, poll=POLL_SECONDS),
                    mimetype="text/html")


def _back() -> BaseResponse:
    return _list("list") if is_htmx() else redirect(url_for("notification_views.index"), 303)


@bp.post("/<notification_id>/read")
def mark_read(notification_id: str) -> BaseResponse:
    service.set_status(current_actor(), notification_id, "Read")
    return _back()


@bp.post("/seen")
def mark_all_seen() -> BaseResponse:
    service.mark_all_seen(current_actor())
    return _back()


@bp.get("/<notification_id>/open")
@writes
def open_subject(notification_id: str) -> BaseResponse:
    """Mark the notification Read and go to its subject (back to the list if it has none)."""
    row = service.set_status(current_actor(), notification_id, "Read")
    target = subject_url(row.subject_class, row.subject_id)
    return redirect(target or url_for("notification_views.index"), 303)
