"""The dashboard editor's form: rows of widget fields to the API's dashboard body and back.

Every widget row carries the same inputs (plugin, header, position and size, and the
config fields of any widget); a row keeps only the config fields of its plugin, and a row
whose plugin is left empty is dropped (that is how a widget is removed, and how the blank
last row adds one). Numbers that do not parse are passed on as text, so the schema names
the field that is wrong.
"""
from __future__ import annotations

from typing import Any

from werkzeug.datastructures import MultiDict

from labapp.dashboards.service import SHARE_FIELDS

ROW_FIELDS = ("plugin", "header", "x", "y", "cols", "rows", "eclass", "filter", "columns",
              "size", "markdown", "location")
_SIZE_KEY = {"created-per-week": "weeks", "saved-list": "top", "recent-activity": "limit"}
_PICKERS = {"userIDs": "share_users", "departmentIDs": "share_departments",
            "projectIDs": "share_projects", "userRoles": "share_roles"}


def _number(text: str) -> int | str:
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        return text


def _config(plugin: str, row: dict[str, str]) -> dict[str, Any]:
    config: dict[str, Any] = {}
    if plugin in {"status-counts", "created-per-week", "saved-list"}:
        config["eClass"] = row["eclass"]
    if plugin == "saved-list":
        if row["filter"].strip():
            config["filter"] = row["filter"].strip()
        columns = [name.strip() for name in row["columns"].split(",") if name.strip()]
        if columns:
            config["columns"] = columns
    if plugin in _SIZE_KEY and row["size"].strip():
        config[_SIZE_KEY[plugin]] = _number(row["size"])
    if plugin == "storage-usage" and row["location"].strip():
        config["locationID"] = row["location"].strip()
    if plugin == "note":
        config["markdown"] = row["markdown"]
    return config


def body_from_form(form: MultiDict[str, Any]) -> dict[str, Any]:
    """The ``POST``/``PUT /api/dashboard`` body the editor's form describes."""
    columns = {name: form.getlist(name) for name in ROW_FIELDS}
    count = max((len(values) for values in columns.values()), default=0)
    widgets = []
    for index in range(count):
        row = {name: (values[index] if index < len(values) else "")
               for name, values in columns.items()}
        plugin = row["plugin"].strip()
        if not plugin:
            continue
        widgets.append({
            "plugin": {"app": "labapp", "plugin": plugin},
            "gridster": {key: _number(row[key] or "0") for key in ("x", "y", "cols", "rows")},
            "config": _config(plugin, row), "header": row["header"].strip() or None})
    shares = {field: [value for value in form.getlist(_PICKERS[field]) if value]
              for field in SHARE_FIELDS}
    return {"name": form.get("name", "").strip(),
            "description": form.get("description", "").strip() or None,
            "widgets": widgets, "shares": shares}


def rows_of(widgets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The editor's rows of stored (or submitted) widgets, plus a blank row to add one."""
    rows = []
    for widget in widgets:
        config = widget.get("config") or {}
        plugin = widget.get("plugin") or {}
        size_key = _SIZE_KEY.get(plugin.get("plugin", ""))
        gridster = widget.get("gridster") or {}
        rows.append({
            "plugin": plugin.get("plugin", ""), "header": widget.get("header") or "",
            **{key: gridster.get(key, "") for key in ("x", "y", "cols", "rows")},
            "eclass": config.get("eClass", ""), "filter": config.get("filter") or "",
            "columns": ", ".join(config.get("columns") or ()),
            "size": config.get(size_key, "") if size_key else "",
            "markdown": config.get("markdown", ""), "location": config.get("locationID") or ""})
    last_y = max((int(row["y"]) + int(row["rows"]) for row in rows
                  if isinstance(row["y"], int) and isinstance(row["rows"], int)), default=0)
    rows.append({**dict.fromkeys(ROW_FIELDS, ""), "x": 0, "y": last_y, "cols": 6, "rows": 4})
    return rows
