"""The dashboard editor's form: widget cards to the API's dashboard body and back, and the
API's error paths to the widget they are about.

Widget ``n`` posts ``w<n>-plugin``, ``w<n>-header``, its position and size
(``w<n>-x|y|cols|rows``) and only the settings of its kind (:data:`KIND_FIELDS`); a card
whose ``w<n>-remove`` box is ticked is dropped. Cards keep the order of their numbers, so the
page's ``n`` may have gaps (a card added then removed in the browser). Numbers that do not
parse are passed on as text, so the schema names the field that is wrong.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from werkzeug.datastructures import MultiDict

from labapp.dashboards.schemas import GRID_COLUMNS, min_columns
from labapp.dashboards.service import SHARE_FIELDS
from labapp.dashboards.widgets import WIDGETS

POSITION = ("x", "y", "cols", "rows")
KIND_FIELDS: dict[str, tuple[str, ...]] = {
    "status-counts": ("eclass",),
    "created-per-week": ("eclass", "size"),
    "saved-list": ("eclass", "filter", "columns", "orderby", "size"),
    "storage-usage": ("location",),
    "my-requests": (),
    "recent-activity": ("size",),
    "note": ("markdown",),
    "alerts": ("rule",),
}
"""The settings each kind of widget shows (and posts), in the order of its dialog."""
SIZE_KEY = {"created-per-week": "weeks", "saved-list": "top", "recent-activity": "limit"}
_CONFIG_KEY = {"eclass": "eClass", "filter": "filter", "orderby": "orderby",
               "location": "locationID", "markdown": "markdown", "rule": "ruleID"}
_FIELD_OF_CONFIG = {**{key: field for field, key in _CONFIG_KEY.items()},
                    "columns": "columns", **dict.fromkeys(SIZE_KEY.values(), "size")}
PICKERS = {"userIDs": "share_users", "departmentIDs": "share_departments",
           "projectIDs": "share_projects", "userRoles": "share_roles"}
NEW_ROWS = 4
_PLUGIN_KEY = re.compile(r"^w(\d+)-plugin$")


def field_label(plugin: str, field: str) -> str:
    """What the editor calls a widget field (lower case; errors name fields by it)."""
    if field == "size":
        return {"weeks": "weeks", "top": "rows", "limit": "items"}[SIZE_KEY[plugin]]
    return {"eclass": "class", "filter": "filter", "columns": "columns",
            "orderby": "order by", "location": "location", "markdown": "note",
            "rule": "alert rule",
            "header": "heading", "plugin": "kind", "x": "column", "y": "row",
            "cols": "width", "rows": "height"}[field]


def _number(text: str) -> int | str:
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        return text


def _config(plugin: str, card: dict[str, str]) -> dict[str, Any]:
    config: dict[str, Any] = {}
    for field in KIND_FIELDS[plugin]:
        value = card.get(field, "")
        if field == "markdown":
            config["markdown"] = value
        elif field == "eclass":
            config["eClass"] = value.strip()
        elif field == "columns":
            columns = [name.strip() for name in value.split(",") if name.strip()]
            if columns:
                config["columns"] = columns
        elif field == "size" and value.strip():
            config[SIZE_KEY[plugin]] = _number(value)
        elif field != "size" and value.strip():
            config[_CONFIG_KEY[field]] = value.strip()
    return config


def _numbers(form: MultiDict[str, Any]) -> list[int]:
    """The numbers of the form's widget cards, in order."""
    return sorted(int(match.group(1)) for match in map(_PLUGIN_KEY.match, form.keys())
                  if match)


def body_from_form(form: MultiDict[str, Any]) -> dict[str, Any]:
    """The ``POST``/``PUT /api/dashboard`` body the editor's form describes."""
    widgets = []
    for number in _numbers(form):
        card = {key[len(f"w{number}-"):]: value for key, value in form.items()
                if key.startswith(f"w{number}-")}
        plugin = card.get("plugin", "").strip()
        if card.get("remove") or plugin not in KIND_FIELDS:
            continue
        widgets.append({
            "plugin": {"app": "labapp", "plugin": plugin},
            "gridster": {key: _number(card.get(key) or "0") for key in POSITION},
            "config": _config(plugin, card), "header": card.get("header", "").strip() or None})
    shares = {field: [value for value in form.getlist(PICKERS[field]) if value]
              for field in SHARE_FIELDS}
    return {"name": form.get("name", "").strip(),
            "description": form.get("description", "").strip() or None,
            "widgets": widgets, "shares": shares}


def new_widget(plugin: str, widgets: list[dict[str, Any]]) -> dict[str, Any]:
    """A widget of kind ``plugin`` with its defaults, placed below the others."""
    bottom = max((widget["gridster"]["y"] + widget["gridster"]["rows"] for widget in widgets
                  if all(isinstance(widget["gridster"].get(key), int) for key in ("y", "rows"))),
                 default=0)
    config: dict[str, Any] = {"markdown": ""} if plugin == "note" else {}
    return {"plugin": {"app": "labapp", "plugin": plugin}, "header": None, "config": config,
            "gridster": {"x": 0, "y": bottom, "cols": max(GRID_COLUMNS // 2, min_columns(plugin)),
                         "rows": NEW_ROWS}}


def widened(widgets: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], set[int]]:
    """The widgets of a stored dashboard as the editor opens them: each narrower than its
    kind's minimum made that wide (moved left when the grid's edge needs it; the page's
    script then moves what it lands on down), and the indexes of those widened."""
    shown, changed = [], set()
    for index, widget in enumerate(widgets):
        grid = widget["gridster"]
        least = min_columns(widget["plugin"]["plugin"])
        if grid["cols"] < least:
            grid = {**grid, "cols": least, "x": min(grid["x"], GRID_COLUMNS - least)}
            changed.add(index)
        shown.append({**widget, "gridster": grid})
    return shown, changed


def card_of(widget: dict[str, Any]) -> dict[str, Any]:
    """The editor's card of a stored (or submitted) widget: its kind, title, position and
    the form values of its kind's settings."""
    config = widget.get("config") or {}
    plugin = (widget.get("plugin") or {}).get("plugin", "")
    gridster = widget.get("gridster") or {}
    size_key = SIZE_KEY.get(plugin)
    values = {"eclass": config.get("eClass", ""), "filter": config.get("filter") or "",
              "columns": ", ".join(config.get("columns") or ()),
              "orderby": config.get("orderby") or "",
              "size": config.get(size_key, "") if size_key else "",
              "markdown": config.get("markdown", ""), "location": config.get("locationID") or "",
              "rule": config.get("ruleID") or ""}
    kind = WIDGETS.get(plugin)
    return {"plugin": plugin, "kind": kind.title if kind else plugin,
            "header": widget.get("header") or "",
            "title": widget.get("header") or (kind.title if kind else plugin),
            "min_cols": min_columns(plugin),
            "fields": [(field, field_label(plugin, field), values[field])
                       for field in KIND_FIELDS.get(plugin, ())],
            **{key: gridster.get(key, "") for key in POSITION}}


@dataclass(frozen=True)
class EditorError:
    """A problem of the save, said in the editor's words: ``widget`` is the index of the
    card it is about (None: the dashboard), ``field`` the form field (None: the whole
    widget or dashboard)."""

    message: str
    widget: int | None = None
    field: str | None = None


_DASHBOARD_LABELS = {"name": "Name", "description": "Description",
                     "shares.userIDs": "Share with users",
                     "shares.departmentIDs": "Share with departments",
                     "shares.projectIDs": "Share with projects",
                     "shares.userRoles": "Share with roles", "widgets": "Widgets"}


def _widget_field(plugin: str, parts: list[str]) -> str | None:
    """The form field a path inside a widget (after ``widgets.<n>.``) names, if any."""
    if parts[:1] == ["gridster"] and len(parts) > 1 and parts[1] in POSITION:
        return parts[1]
    if parts[:1] == ["config"] and len(parts) > 1:
        field = _FIELD_OF_CONFIG.get(parts[1])
        return field if field in KIND_FIELDS.get(plugin, ()) else None
    if parts[:1] in (["header"], ["plugin"]):
        return parts[0]
    return None


def editor_errors(errors: list[dict[str, str]],
                  widgets: list[dict[str, Any]]) -> list[EditorError]:
    """The API's ``[{field, message}]`` of a refused ``widgets`` body, each said of the widget
    it is about: ``widgets.2.config.filter`` becomes "Widget 'Expiring': filter: …" on card
    2, with the form field it names."""
    said = []
    for error in errors:
        path = (error.get("field") or "").split(".")
        message = error["message"]
        if len(path) >= 2 and path[0] == "widgets" and path[1].isdigit() \
                and int(path[1]) < len(widgets):
            index = int(path[1])
            card = card_of(widgets[index])
            field = _widget_field(card["plugin"], path[2:])
            if not message.startswith("Widget "):
                where = f"{field_label(card['plugin'], field)}: " if field else ""
                message = f"Widget {card['title']!r}: {where}{message}"
            said.append(EditorError(message, index, field))
            continue
        dotted = ".".join(part for part in path if not part.isdigit())
        label = _DASHBOARD_LABELS.get(dotted)
        said.append(EditorError(f"{label}: {message}" if label else message, None,
                                dotted if label else None))
    return said
