"""Dashboard pages: the grid of widgets (each loading and refreshing itself with htmx), the
picker of visible dashboards, the editor, and the home page (the user's default dashboard).

Widgets render the same data as ``GET /api/dashboard/{id}/widget/{index}``
(:func:`service.widget_data`); charts are SVG drawn by the page template from
:mod:`labapp.dashboards.charts`, with a table of the same numbers.
"""
from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, flash, redirect, request, url_for
from marshmallow import ValidationError
from werkzeug.wrappers import Response as BaseResponse

from labapp.access.actor import Actor
from labapp.dashboards import charts, service
from labapp.dashboards.editor import (
    KIND_FIELDS,
    PICKERS,
    body_from_form,
    card_of,
    editor_errors,
    new_widget,
)
from labapp.dashboards.schemas import DashboardInputSchema, min_columns
from labapp.dashboards.widgets import WIDGETS
from labapp.db import transaction
from labapp.errors import Forbidden, InvalidInput, flatten_messages
from labapp.model.registry import classes
from labapp.web.blocks import render_block, render_page
from labapp.web.loader import current_actor
from labapp.web.pages import members_only, no_store, signed_in_only

bp = members_only(Blueprint("dashboard_views", __name__, url_prefix="/dashboards"))

PAGE = "dashboards/page.html"
EDITOR = "dashboards/editor.html"
REFRESH_SECONDS = 60


def _page(actor: Actor, dashboard_id: str | None) -> Response:
    """A dashboard's page; the default one (the home page) when ``dashboard_id`` is None.

    The page reads; the starter dashboard of a first visit is a write unit of its own."""
    with transaction():
        board = (service.get_visible(actor, dashboard_id) if dashboard_id
                 else service.own_default(actor))
    if board is None:
        with transaction(write=True):
            board = service.default_for(actor)
    with transaction():
        boards = service.list_dashboards(actor)
        data = service.to_api(actor, board)
    return render_page(PAGE, board=data, boards=[(b.id, b.name, b.user_id) for b in boards],
                       widgets=WIDGETS, refresh=REFRESH_SECONDS, is_home=dashboard_id is None)


def home() -> BaseResponse:
    """The home page: the signed-in user's default dashboard (a starter one at first).
    Routed by the application as ``web.home``, outside this blueprint: never cached, as
    its pages are not."""
    return signed_in_only() or no_store(_page(current_actor(), None))


@bp.get("")
def index() -> BaseResponse:
    return redirect(url_for("web.home"))


@bp.get("/<dashboard_id>")
def show(dashboard_id: str) -> Response:
    return _page(current_actor(), dashboard_id)


def chart_of(plugin: str, data: dict[str, Any], columns: int) -> charts.Chart | None:
    """The chart a widget ``columns`` grid columns wide draws, if it draws one (never
    narrower than the kind's minimum: dashboards saved before it was enforced)."""
    columns = max(columns, min_columns(plugin))
    if plugin == "status-counts":
        return charts.bars(data["bars"], columns=columns)
    if plugin == "storage-usage":
        return charts.bars(data["bars"], columns=columns, by_capacity=True)
    if plugin == "created-per-week":
        return charts.line(data["points"], columns=columns)
    return None


def _kind_title(plugin: str) -> str:
    """The title of a widget kind, its plugin name when the kind is not built in."""
    return WIDGETS[plugin].title if plugin in WIDGETS else plugin


@bp.get("/<dashboard_id>/widget/<int:index>")
def widget(dashboard_id: str, index: int) -> Response:
    """One widget's content, rendered alone (htmx loads and refreshes it)."""
    actor = current_actor()
    page = request.args.get("page", "0")
    page_number = int(page) if page.isdigit() else 0
    with transaction():
        answer = service.widget_data(actor, dashboard_id, index, page_number)
    plugin = answer["plugin"]["plugin"]
    # A fragment endpoint: the block alone, also for a plain request (a page link of a
    # saved list followed without JavaScript).
    return Response(render_block(PAGE, "widget", board={"id": dashboard_id}, index=index,
                                 plugin=plugin, data=answer["data"],
                                 title=answer["header"] or _kind_title(plugin),
                                 chart=None if "problem" in answer["data"]
                                 else chart_of(plugin, answer["data"],
                                               answer["gridster"]["cols"]),
                                 refresh=REFRESH_SECONDS), mimetype="text/html")


def _editor(actor: Actor, board: dict[str, Any] | None, form: dict[str, Any],
            errors: list[dict[str, str]], status: int = 200) -> Response:
    """The editor of ``form`` (a dashboard body); ``errors`` as the API would answer them,
    shown at the widget they are about."""
    widgets = form.get("widgets", [])
    with transaction():
        choices = service.share_choices(actor)
    return render_page(EDITOR, status=status, board=board, form=form,
                       cards=[card_of(widget) for widget in widgets],
                       templates={kind: card_of(new_widget(kind, [])) for kind in KIND_FIELDS},
                       errors=editor_errors(errors, widgets), choices=choices, pickers=PICKERS,
                       widgets=WIDGETS, eclasses=[spec.name for spec in classes()])


def _save(actor: Actor, dashboard_id: str | None) -> BaseResponse:
    body = body_from_form(request.form)
    board = {"id": dashboard_id} if dashboard_id else None
    added = request.form.get("add_kind", "")
    if "add" in request.form and added in KIND_FIELDS:
        # "Add widget" without JavaScript: the same form again, with one more card.
        body["widgets"].append(new_widget(added, body["widgets"]))
        return _editor(actor, board, body, [])
    try:
        loaded = DashboardInputSchema().load(body)
        with transaction():
            saved = (service.update(actor, dashboard_id, loaded) if dashboard_id
                     else service.create(actor, loaded))
            saved_id = saved.id
    except ValidationError as error:
        return _editor(actor, board, body, flatten_messages(error.messages), 400)
    except InvalidInput as error:
        return _editor(actor, board, body,
                       error.errors or [{"field": "", "message": error.detail}], 400)
    flash("Dashboard saved.", "success")
    return redirect(url_for("dashboard_views.show", dashboard_id=saved_id), 303)


@bp.route("/new", methods=["GET", "POST"])
def create() -> BaseResponse:
    actor = current_actor()
    if request.method == "POST":
        return _save(actor, None)
    return _editor(actor, None, {"name": "", "widgets": [], "shares": {}}, [])


@bp.route("/<dashboard_id>/edit", methods=["GET", "POST"])
def edit(dashboard_id: str) -> BaseResponse:
    actor = current_actor()
    with transaction():
        board = service.get_visible(actor, dashboard_id)
        data = service.to_api(actor, board)
    if not data["canWrite"]:
        raise Forbidden(f"Only the owner or ADMIN may change dashboard {dashboard_id!r}.")
    if request.method == "POST":
        return _save(actor, dashboard_id)
    return _editor(actor, data, data, [])


@bp.post("/<dashboard_id>/delete")
def delete(dashboard_id: str) -> BaseResponse:
    with transaction():
        service.delete(current_actor(), dashboard_id)
    flash("Dashboard deleted.", "success")
    return redirect(url_for("web.home"), 303)
