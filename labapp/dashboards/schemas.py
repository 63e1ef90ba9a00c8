"""Bodies of the dashboard endpoints: the dashboard, its widgets and its shares.

Each widget's ``config`` is loaded through that widget's own schema
(:mod:`labapp.dashboards.widgets`), so an error names ``widgets.<index>.config.<field>``.
"""
from __future__ import annotations

from collections.abc import Collection
from typing import Any

from marshmallow import Schema, ValidationError, fields, post_load, validate, validates_schema

from labapp.dashboards.widgets import APP, WIDGETS, load_config
from labapp.schemafields import SharedInputSchema, SharedSchema

GRID_COLUMNS = 12
MAX_WIDGETS = 40
MIN_COLUMNS = {"status-counts": ("a status chart", 6),
               "created-per-week": ("a per-week chart", 6),
               "storage-usage": ("a storage chart", 6),
               "alerts": ("an alerts list", 4)}
"""The narrowest a widget of each kind is drawn (the page, ``layout``) and arranged (the
editor) at, in grid columns, with what the editor's error calls it (charts: their labels and
values stay readable); kinds not named may be 1 column. The API stores narrower widths:
earlier clients saved them."""


REFUSED_NARROWER = frozenset({"alerts"})
"""The kinds the API refuses narrower than their minimum: the alerts list, refused so since
it exists (issue 23). Charts it stored at any width before issue 21 §4, and stores so again
(issue 32 §5): dashboards of earlier clients hold narrow ones and must save back."""


def min_columns(kind: str) -> int:
    """The fewest grid columns a widget of ``kind`` is drawn at (:data:`MIN_COLUMNS`)."""
    return MIN_COLUMNS[kind][1] if kind in MIN_COLUMNS else 1


def too_narrow(widgets: list[dict[str, Any]],
               kinds: Collection[str] = frozenset(MIN_COLUMNS)) -> list[dict[str, str]]:
    """Each widget of ``kinds`` narrower than its kind's minimum, as an error naming it
    (``widgets.<n>.gridster.cols``: "Widget 'Status': a status chart needs at least 6
    columns")."""
    errors = []
    for index, widget in enumerate(widgets):
        kind = widget["plugin"]["plugin"]
        columns = widget["gridster"]["cols"]
        if kind in kinds and isinstance(columns, int) and columns < min_columns(kind):
            noun, least = MIN_COLUMNS[kind]
            name = widget.get("header") or WIDGETS[kind].title
            errors.append({"field": f"widgets.{index}.gridster.cols",
                           "message": f"Widget {name!r}: {noun} needs at least {least} "
                                      "columns"})
    return errors


class PluginSchema(Schema):
    app = fields.String(required=True, validate=validate.Equal(APP))
    plugin = fields.String(required=True, validate=validate.OneOf(sorted(WIDGETS)))


class GridsterSchema(Schema):
    """Position and size on the 12-column grid (non-negative integers)."""

    x = fields.Integer(required=True, strict=True,
                       validate=validate.Range(min=0, max=GRID_COLUMNS - 1))
    y = fields.Integer(required=True, strict=True, validate=validate.Range(min=0, max=1000))
    cols = fields.Integer(required=True, strict=True,
                          validate=validate.Range(min=1, max=GRID_COLUMNS))
    rows = fields.Integer(required=True, strict=True, validate=validate.Range(min=1, max=50))

    @validates_schema
    def _inside_the_grid(self, data: dict[str, Any], **_kwargs: Any) -> None:
        if "x" in data and "cols" in data and data["x"] + data["cols"] > GRID_COLUMNS:
            raise ValidationError(f"x + cols must not exceed {GRID_COLUMNS}", "cols")


class WidgetSchema(Schema):
    plugin = fields.Nested(PluginSchema, required=True)
    gridster = fields.Nested(GridsterSchema, required=True)
    config = fields.Dict(keys=fields.String(), required=True)
    header = fields.String(load_default=None, allow_none=True,
                           validate=validate.Length(max=255))

    @post_load
    def _config_of_its_widget(self, data: dict[str, Any], **_kwargs: Any) -> dict[str, Any]:
        try:
            data["config"] = load_config(data["plugin"]["plugin"], data["config"])
        except ValidationError as error:
            raise ValidationError({"config": error.messages}) from None
        return data


class DashboardInputSchema(SharedInputSchema):
    """``POST``/``PUT /api/dashboard``: a full dashboard, which may be one as read
    (:class:`SharedInputSchema`: ``id``, ``userID`` and the read-only fields ignored)."""

    name = fields.String(required=True, validate=validate.Length(min=1, max=255))
    description = fields.String(load_default=None, allow_none=True,
                                validate=validate.Length(max=4000))
    widgets = fields.List(fields.Nested(WidgetSchema), load_default=list,
                          validate=validate.Length(max=MAX_WIDGETS))


class DashboardSchema(SharedSchema):
    """A dashboard as the API shows it."""

    name = fields.String(required=True)
    description = fields.String(allow_none=True)
    widgets = fields.List(fields.Nested(WidgetSchema), required=True)


class WidgetDataSchema(Schema):
    """``GET /api/dashboard/{id}/widget/{index}``: the widget and its live data."""

    index = fields.Integer(required=True)
    plugin = fields.Nested(PluginSchema, required=True)
    header = fields.String(allow_none=True)
    gridster = fields.Nested(GridsterSchema, required=True)
    data = fields.Dict(required=True, metadata={"description": "depends on the widget"})


class WidgetQuerySchema(Schema):
    page = fields.Integer(load_default=0, validate=validate.Range(min=0, max=100000),
                          metadata={"description": "page of a saved list, from 0"})
