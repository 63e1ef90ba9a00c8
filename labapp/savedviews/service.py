"""Saved views (issue 21 §2): a list's filter, columns and sort stored under a name.

Who reads, changes and deletes a view is the rule of every owned thing
(:mod:`labapp.access.owned`), shared as dashboards are: the owner, whoever it is shared with
(a user, their department, a project they can read, one of their roles) and ADMIN see it;
the owner or ADMIN changes it; only the owner deletes it. A view the actor cannot see is
404, one they see but may not change 403. A view turns into a ``saved-list`` widget
appended to a dashboard the actor may change.
"""
from __future__ import annotations

from typing import Any

from marshmallow import ValidationError

from labapp.access import sharing
from labapp.access.actor import Actor
from labapp.access.owned import OwnedKind
from labapp.dashboards import service as dashboards
from labapp.dashboards.schemas import GRID_COLUMNS, DashboardInputSchema
from labapp.db import db
from labapp.errors import InvalidInput, flatten_messages
from labapp.model import SavedView, SavedViewShare
from labapp.model.registry import find_class
from labapp.model.types import utc_now
from labapp.query.fields import entity_fields
from labapp.query.filter import compile_filter
from labapp.query.listing import parse_select, parse_sort_keys

# The size of the saved-list widget a view becomes: half the grid, as the starter widgets.
WIDGET_COLUMNS, WIDGET_ROWS = 6, 4

SAVED_VIEWS = OwnedKind(
    "saved view", SavedView, SavedView.id, SavedView.user_id, SavedView.name, "userID",
    shares=sharing.ShareTable(SavedView.shares, SavedViewShare.kind, SavedViewShare.target,
                              SavedViewShare.view_id == SavedView.id))


def to_api(actor: Actor, view: SavedView) -> dict[str, Any]:
    """A saved view as the API shows it, with ``canWrite`` for the actor."""
    return {"id": view.id, "name": view.name, "eClass": view.eclass, "filter": view.filter,
            "columns": list(view.columns), "orderby": view.orderby,
            **SAVED_VIEWS.ownership(actor, view)}


def list_views(actor: Actor, eclass: str | None = None) -> list[SavedView]:
    """The saved views the actor may see (of ``eclass`` when given): their own first, then
    by name. An unknown class has none."""
    if eclass is None:
        return SAVED_VIEWS.listed(actor)
    spec = find_class(eclass)
    return SAVED_VIEWS.listed(actor, SavedView.eclass == (spec.name if spec else eclass))


def get_visible(actor: Actor, view_id: str) -> SavedView:
    """The saved view if the actor may see it; else 404."""
    return SAVED_VIEWS.get_visible(actor, view_id)


def _invalid(field: str, message: str, code: str = "invalid_input") -> InvalidInput:
    return InvalidInput(message, code=code, errors=[{"field": field, "message": message}])


def checked(actor: Actor, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with the class named as the model names it, the filter, columns and sort
    checked against the class as the list checks them (400 naming the field otherwise);
    empty texts become None."""
    spec = find_class(data["eClass"])
    if spec is None:
        raise _invalid("eClass", f"Unknown entity class {data['eClass']!r}.", "unknown_class")
    source = entity_fields(spec)
    text = (data.get("filter") or "").strip() or None
    try:
        compile_filter(text, source, user_id=actor.user_id)
    except InvalidInput as error:
        raise _invalid("filter", error.detail, error.code) from None
    columns = []
    for index, column in enumerate(data.get("columns") or ()):
        try:
            [name] = parse_select(column, source, always=())
        except InvalidInput as error:
            raise _invalid(f"columns.{index}", error.detail.replace(" at position 0", ""),
                           error.code) from None
        columns.append(name)
    orderby = (data.get("orderby") or "").strip() or None
    try:
        parse_sort_keys(orderby, source)
    except InvalidInput as error:
        raise _invalid("orderby", error.detail, error.code) from None
    return {**data, "eClass": spec.name, "filter": text,
            "columns": list(dict.fromkeys(columns)), "orderby": orderby}


def _apply(actor: Actor, view: SavedView, data: dict[str, Any]) -> None:
    data = checked(actor, data)
    SAVED_VIEWS.share(actor, view, data["shares"])
    view.name, view.eclass = data["name"], data["eClass"]
    view.filter, view.columns, view.orderby = data["filter"], data["columns"], data["orderby"]
    view.modified_utc = utc_now()


def create(actor: Actor, data: dict[str, Any]) -> SavedView:
    """Store a new saved view owned by the actor."""
    view = SAVED_VIEWS.new(actor, utc_now())
    _apply(actor, view, data)
    db.session.add(view)
    db.session.flush()
    return view


def update(actor: Actor, view_id: str, data: dict[str, Any]) -> SavedView:
    """Replace a saved view (its owner or ADMIN)."""
    view = SAVED_VIEWS.get_changeable(actor, view_id)
    _apply(actor, view, data)
    db.session.flush()
    return view


def delete(actor: Actor, view_id: str) -> None:
    """Delete a saved view; only its owner may."""
    SAVED_VIEWS.delete(actor, view_id)


def editable_dashboards(actor: Actor) -> list[tuple[str, str]]:
    """``(id, name)`` of the dashboards the actor may add a widget to."""
    return [(board.id, board.name) for board in dashboards.list_dashboards(actor)
            if dashboards.DASHBOARDS.may_change(actor, board)]


def free_position(widgets: list[dict[str, Any]], cols: int, rows: int) -> tuple[int, int]:
    """The first ``(x, y)``, row by row, where a ``cols`` × ``rows`` widget overlaps none."""
    taken = {(x, y) for widget in widgets for g in [widget["gridster"]]
             for x in range(g["x"], g["x"] + g["cols"])
             for y in range(g["y"], g["y"] + g["rows"])}
    y = 0
    while True:
        for x in range(GRID_COLUMNS - cols + 1):
            if not any((x + dx, y + dy) in taken for dx in range(cols) for dy in range(rows)):
                return x, y
        y += 1


def widget_config(view: SavedView) -> dict[str, Any]:
    """The ``saved-list`` config that lists what the view lists."""
    config: dict[str, Any] = {"eClass": view.eclass, "filter": view.filter,
                              "orderby": view.orderby}
    if view.columns:
        config["columns"] = list(view.columns)
    return config


def add_to_dashboard(actor: Actor, view_id: str, dashboard_id: str) -> int:
    """Append the view as a ``saved-list`` widget at the dashboard's first free place (the
    dashboard's owner or ADMIN); returns the widget's index."""
    view = get_visible(actor, view_id)
    board = dashboards.to_api(actor, dashboards.get_changeable(actor, dashboard_id))
    x, y = free_position(board["widgets"], WIDGET_COLUMNS, WIDGET_ROWS)
    widget = {"plugin": {"app": "labapp", "plugin": "saved-list"},
              "gridster": {"x": x, "y": y, "cols": WIDGET_COLUMNS, "rows": WIDGET_ROWS},
              "config": widget_config(view), "header": view.name}
    try:
        body = DashboardInputSchema().load(
            {"name": board["name"], "description": board["description"],
             "widgets": [*board["widgets"], widget], "shares": board["shares"]})
    except ValidationError as error:
        raise InvalidInput(f"Cannot add the view to dashboard {board['name']!r}.",
                           errors=flatten_messages(error.messages)) from None
    dashboards.update(actor, dashboard_id, body)
    return len(body["widgets"]) - 1
