"""Dashboard pages: the grid of widgets (each loading and refreshing itself with htmx), the
picker of visible dashboards, the editor, and the home page (the user's default dashboard).

Widgets render the same data as ``GET /api/dashboard/{id}/widget/{index}``
(:func:`service.widget_data`); charts are SVG drawn by the page template from
:mod:`labapp.dashboards.charts`, with a table of the same numbers.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from flask import Blueprint, Response, flash, redirect, request, url_for
from marshmallow import ValidationError
from werkzeug.wrappers import Response as BaseResponse

from labapp.access.actor import Actor
from labapp.dashboards import charts, layout, service
from labapp.dashboards.editor import (
    KIND_FIELDS,
    PICKERS,
    body_from_form,
    card_of,
    editor_errors,
    new_widget,
    widened,
)
from labapp.dashboards.schemas import DashboardInputSchema, min_columns, too_narrow
from labapp.dashboards.widgets import WIDGETS
from labapp.db import transaction
from labapp.entities.loading import visible_names
from labapp.errors import InvalidInput, flatten_messages
from labapp.model.registry import classes, find_class
from labapp.reading import column_fit
from labapp.reading.wording import words_of
from labapp.web.blocks import render_block, render_page
from labapp.web.loader import current_actor
from labapp.web.pages import members_only, no_store, signed_in_only
from labapp.web.units import opens_own_units

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
        people = visible_names(actor, (b.user_id for b in boards))
    return render_page(PAGE, board=data, boards=[(b.id, b.name, b.user_id) for b in boards],
                       people=people, boxes=layout.drawn(data["widgets"]), widgets=WIDGETS,
                       refresh=REFRESH_SECONDS, is_home=dashboard_id is None)


@opens_own_units
def home() -> BaseResponse:
    """The home page: the signed-in user's default dashboard (a starter one at first).
    Routed by the application as ``web.home``, outside this blueprint: never cached, as
    its pages are not."""
    return signed_in_only() or no_store(_page(current_actor(), None))


@bp.get("")
def index() -> BaseResponse:
    return redirect(url_for("web.home"))


@bp.get("/<dashboard_id>")
@opens_own_units
def show(dashboard_id: str) -> Response:
    return _page(current_actor(), dashboard_id)


def chart_of(plugin: str, data: dict[str, Any], columns: int, width: int | None = None,
             as_table: bool = False) -> charts.Chart | None:
    """The chart a widget draws, if it draws one: ``width`` pixels wide when the page
    measured it, else as wide as ``columns`` grid columns (never narrower than the kind's
    minimum); ``as_table`` when the page could not give it its minimum width."""
    columns = max(columns, min_columns(plugin))
    if plugin == "status-counts":
        worded = [{**bar, "label": words_of(str(bar["label"]))} for bar in data["bars"]]
        chart = charts.bars(worded, columns=columns, width=width)
    elif plugin == "storage-usage":
        chart = charts.bars(data["bars"], columns=columns, width=width, by_capacity=True)
    elif plugin == "created-per-week":
        chart = charts.line(data["points"], columns=columns, width=width)
    else:
        return None
    return replace(chart, as_table=True) if as_table else chart


def _fits(eclass: str | None, headers: list[dict[str, str]],
          orderby: str | None = None) -> list[column_fit.Fit]:
    """How each column of a listed class fits the widget's width (column_fit)."""
    return column_fit.fits(find_class(eclass or ""), [header["field"] for header in headers],
                           [header["label"] for header in headers], orderby)


def list_fits(plugin: str, data: dict[str, Any]) -> dict[str, list[column_fit.Fit]]:
    """The column fits of a list widget's tables: ``""`` for a saved list's, each alert
    rule's id for the alerts widget's; none for other kinds."""
    if plugin == "saved-list" and "headers" in data:
        return {"": _fits(data.get("eClass"), data["headers"], data.get("orderby"))}
    if plugin == "alerts":
        return {rule["id"]: _fits(rule.get("eClass"), rule["headers"])
                for rule in data.get("rules", []) if "headers" in rule}
    return {}


def _kind_title(plugin: str) -> str:
    """The title of a widget kind, its plugin name when the kind is not built in."""
    return WIDGETS[plugin].title if plugin in WIDGETS else plugin


def _width() -> int | None:
    """``?width=``: how many CSS pixels wide the page measured the widget (None when absent
    or not a sensible number)."""
    width = request.args.get("width", type=int)
    return width if width is not None and 0 < width <= charts.MAX_WIDTH else None


@bp.get("/<dashboard_id>/widget/<int:index>")
def widget(dashboard_id: str, index: int) -> Response:
    """One widget's content, rendered alone (htmx loads and refreshes it). The page adds
    ``width`` (the widget's width in CSS pixels, which a chart's view box takes),
    ``table=1`` (a chart the page could not give its minimum width) and ``heading`` (the
    level of the headings inside the widget: one below its title's)."""
    actor = current_actor()
    page = request.args.get("page", "0")
    page_number = int(page) if page.isdigit() else 0
    heading = request.args.get("heading", type=int)
    answer = service.widget_data(actor, dashboard_id, index, page_number)
    plugin = answer["plugin"]["plugin"]
    # Who did what in recent activity: users by the names the reader may see.
    people = visible_names(actor, (row["userID"] for row in answer["data"].get("rows", ())
                                   if plugin == "recent-activity"))
    # A fragment endpoint: the block alone, also for a plain request (a page link of a
    # saved list followed without JavaScript).
    return Response(render_block(PAGE, "widget", board={"id": dashboard_id}, index=index,
                                 plugin=plugin, data=answer["data"],
                                 title=answer["header"] or _kind_title(plugin),
                                 chart=None if "problem" in answer["data"]
                                 else chart_of(plugin, answer["data"],
                                               answer["gridster"]["cols"], _width(),
                                               request.args.get("table") == "1"),
                                 heading=heading if heading in (3, 4, 5, 6) else 4,
                                 fits=list_fits(plugin, answer["data"]), people=people,
                                 refresh=REFRESH_SECONDS), mimetype="text/html")


def _editor(actor: Actor, board: dict[str, Any] | None, form: dict[str, Any],
            errors: list[dict[str, str]], status: int = 200,
            widened_cards: frozenset[int] = frozenset()) -> Response:
    """The editor of ``form`` (a dashboard body); ``errors`` as the API would answer them,
    shown at the widget they are about; ``widened_cards`` the cards of charts the editor
    widened to their kind's minimum."""
    widgets = form.get("widgets", [])
    choices = service.share_choices(actor)
    return render_page(EDITOR, status=status, board=board, form=form,
                       cards=[{**card_of(widget), "widened": index in widened_cards}
                              for index, widget in enumerate(widgets)],
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
        narrow = too_narrow(loaded["widgets"])
        if narrow:
            return _editor(actor, board, body, narrow, 400)
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
    data = service.to_api(actor, service.get_changeable(actor, dashboard_id))
    if request.method == "POST":
        return _save(actor, dashboard_id)
    # Charts saved narrower than their kind allows (by an earlier client) open at their
    # minimum, so saving the dashboard back stores a width the editor accepts.
    shown, changed = widened(data["widgets"])
    return _editor(actor, data, {**data, "widgets": shown}, [],
                   widened_cards=frozenset(changed))


@bp.post("/<dashboard_id>/delete")
def delete(dashboard_id: str) -> BaseResponse:
    service.delete(current_actor(), dashboard_id)
    flash("Dashboard deleted.", "success")
    return redirect(url_for("web.home"), 303)
