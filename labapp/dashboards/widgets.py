"""The built-in widgets (decisions §12): each a config schema and a data function.

A data function reads live data as the actor, through the same services and the same
visibility predicate as the API, and returns plain JSON-ready data: the page draws it and
``GET /api/dashboard/{id}/widget/{index}`` answers it, so both always agree.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import nh3
from markdown_it import MarkdownIt
from marshmallow import Schema, ValidationError, fields, validate, validates
from sqlalchemy import func, or_, select

from labapp.access.actor import Actor
from labapp.access.visibility import NONE, access_type, readable
from labapp.alerts.matching import RuleBroken, rule_condition
from labapp.alerts.service import find_told, rules_telling
from labapp.dashboards import lists
from labapp.db import db
from labapp.errors import InvalidInput
from labapp.model import AlertRule, Entity, EntityEvent, Location, Request
from labapp.model.registry import ClassSpec, find_class
from labapp.model.types import utc_now
from labapp.query.fields import entity_fields
from labapp.query.filter import compile_filter
from labapp.query.listing import parse_select, parse_sort_keys, sort_clause
from labapp.reading.entity_counts import visible_tally
from labapp.reading.wording import label_of
from labapp.storage.service import storage_usage as location_usage

APP = "labapp"
CLOSED_REQUEST_STATUSES = ("Completed", "Rejected", "Canceled")
DEFAULT_COLUMNS = ("id", "name", "status")
# A saved list's order when its config names none: as the entity lists read, by name.
DEFAULT_ORDER = "name"
WEEK = timedelta(days=7)
MAX_LOCATIONS = 50
ACTIVITY_CHUNK = 200
ACTIVITY_CHUNKS = 20
ALERT_ITEMS = 20  # items an alerts widget lists per rule (the count says how many match)
MAX_ALERT_RULES = 10
_markdown = MarkdownIt("commonmark", {"html": False})


def _class_name(value: str) -> str:
    spec = find_class(value)
    if spec is None:
        raise ValidationError(f"unknown entity class {value!r}")
    return spec.name


class ClassGone(Exception):
    """A saved widget names a class the data model no longer has: its config was checked
    when saved, and a later data-model sync removed the class."""

    def __init__(self, name: str) -> None:
        super().__init__(f"Class {name!r} no longer exists in the data model; "
                         "edit this widget to choose another.")
        self.name = name


def _widget_class(name: str) -> ClassSpec:
    """The class a saved widget counts or lists (ClassGone if the model has lost it)."""
    spec = find_class(name)
    if spec is None:
        raise ClassGone(name)
    return spec


class _EClassConfig(Schema):
    eClass = fields.String(required=True, validate=validate.Length(min=1, max=32))

    @validates("eClass")
    def _known(self, value: str, **_kwargs: Any) -> None:
        _class_name(value)


class StatusCountsConfig(_EClassConfig):
    pass


class CreatedPerWeekConfig(_EClassConfig):
    weeks = fields.Integer(strict=True, load_default=12, validate=validate.Range(min=1, max=104))


class SavedListConfig(_EClassConfig):
    filter = fields.String(load_default=None, allow_none=True,
                           validate=validate.Length(max=2000))
    columns = fields.List(fields.String(validate=validate.Length(min=1, max=64)),
                          load_default=None, allow_none=True, validate=validate.Length(max=12))
    top = fields.Integer(strict=True, load_default=10, validate=validate.Range(min=1, max=100))
    orderby = fields.String(load_default=None, allow_none=True,
                            validate=validate.Length(max=500))


class StorageUsageConfig(Schema):
    locationID = fields.String(load_default=None, allow_none=True,
                               validate=validate.Length(min=1, max=64))


class MyRequestsConfig(Schema):
    pass


class RecentActivityConfig(Schema):
    limit = fields.Integer(strict=True, load_default=10, validate=validate.Range(min=1, max=50))


class NoteConfig(Schema):
    markdown = fields.String(required=True, validate=validate.Length(max=20000))


class AlertsConfig(Schema):
    ruleID = fields.String(load_default=None, allow_none=True,
                           validate=validate.Length(min=1, max=64))


def check_alert_rules(actor: Actor, widgets: list[dict[str, Any]]) -> None:
    """Each ``alerts`` widget's rule must be one the actor may read (decisions §16): 400
    otherwise, the same answer for a rule that does not exist and one they may not read."""
    errors = [{"field": f"widgets.{index}.config.ruleID",
               "message": f"unknown alert rule {widget['config']['ruleID']!r}"}
              for index, widget in enumerate(widgets)
              if widget["plugin"]["plugin"] == "alerts" and widget["config"].get("ruleID")
              and find_told(actor, widget["config"]["ruleID"]) is None]
    if errors:
        raise InvalidInput("An alerts widget names an unknown alert rule.", errors=errors)


def check_saved_list(config: dict[str, Any]) -> None:
    """A saved list's filter and columns must compile against its class (400 otherwise)."""
    spec = find_class(config["eClass"])
    if spec is None:
        raise ValidationError({"eClass": [f"unknown entity class {config['eClass']!r}"]})
    source = entity_fields(spec)
    try:
        compile_filter(config.get("filter"), source, user_id=None)
    except InvalidInput as error:
        raise ValidationError({"filter": [error.detail]}) from None
    try:
        parse_select(",".join(config.get("columns") or DEFAULT_COLUMNS), source)
    except InvalidInput as error:
        raise ValidationError({"columns": [error.detail]}) from None
    try:
        parse_sort_keys(config.get("orderby"), source)
    except InvalidInput as error:
        raise ValidationError({"orderby": [error.detail]}) from None


def status_counts(actor: Actor, config: dict[str, Any], _page: int) -> dict[str, Any]:
    """How many visible entities of the class are in each of its statuses (bar chart), from
    the tallies (a few rows per class and day, not every entity)."""
    spec = _widget_class(config["eClass"])
    tally, visible = visible_tally(actor, spec.name)
    counted = {status: int(count) for status, count in db.session.execute(
        select(tally.c.status, func.sum(tally.c.n)).where(visible)
        .group_by(tally.c.status)).all() if count}
    order = list(spec.workflow.statuses) + sorted(set(counted) - set(spec.workflow.statuses))
    return {"eClass": spec.name,
            "bars": [{"label": status, "value": counted.get(status, 0)} for status in order]}


def created_per_week(actor: Actor, config: dict[str, Any], _page: int) -> dict[str, Any]:
    """Visible entities of the class created in each of the last ``weeks`` weeks (line
    chart), from the tallies' days; the last point is the current, unfinished week."""
    spec = _widget_class(config["eClass"])
    weeks = config.get("weeks") or 12
    today = utc_now().date()
    start = today - timedelta(days=today.weekday()) - WEEK * (weeks - 1)
    tally, visible = visible_tally(actor, spec.name)
    counted = [0] * weeks
    for day, count in db.session.execute(
            select(tally.c.day, func.sum(tally.c.n)).where(visible, tally.c.day >= start)
            .group_by(tally.c.day)).all():
        week = (day - start).days // 7
        if 0 <= week < weeks:
            counted[week] += int(count)
    return {"eClass": spec.name,
            "points": [{"label": (start + WEEK * week).isoformat(), "value": counted[week]}
                       for week in range(weeks)]}


def saved_list(actor: Actor, config: dict[str, Any], page: int) -> dict[str, Any]:
    """One page of a saved list: the class's visible entities matching the filter, in the
    configured ``orderby`` (by name when none), the id breaking ties.

    ``rows`` hold the stored values of the columns; ``headers`` and ``cells`` are the same
    rows as a person reads them: field labels, references by the names the reader may see
    (looked up in one query), numbers with their unit (a unit column beside its number is
    folded into it) and each row's ``id`` to link it to its entity.

    No total: counting every match of a broad filter costs more than the page itself
    (bench/runs/2026-11-23-dashboards.md), and paging needs only whether a next page exists."""
    spec = _widget_class(config["eClass"])
    source = entity_fields(spec)
    columns = list(config.get("columns") or DEFAULT_COLUMNS)
    wanted = parse_select(",".join(columns), source, always=())
    keys = [name for name in wanted if name.startswith("attributes.")]
    companions = lists.companions(spec, wanted)
    selected = list(dict.fromkeys(["id", *(name for name in wanted
                                           if not name.startswith("attributes.")),
                                   *companions]))
    if keys and "attributes" not in selected:
        selected.append("attributes")
    top = config.get("top") or 10
    order = [sort_clause(field, descending) for field, descending
             in parse_sort_keys(config.get("orderby") or DEFAULT_ORDER, source)]
    rows = db.session.execute(
        select(*(getattr(spec.model, spec.fields[name].stored_attr) for name in selected))
        .where(readable(actor, spec.model),
               compile_filter(config.get("filter"), source, user_id=actor.user_id))
        .order_by(*order, spec.model.id).limit(top + 1).offset(page * top)).all()
    items = []
    for row in rows[:top]:
        item = dict(zip(selected, row, strict=True))
        attributes = item.get("attributes") or {}
        item.update({key: attributes.get(key.split(".", 1)[1]) for key in keys})
        items.append(item)
    shown = [name for name in wanted if name not in companions]
    if all(name in spec.fields and spec.fields[name].type == "ref" for name in shown):
        shown.insert(0, "id")  # a row needs one cell that links to it
    return {"eClass": spec.name, "columns": columns, "filter": config.get("filter"),
            "orderby": config.get("orderby") or DEFAULT_ORDER,
            "rows": [{column: item.get(column) for column in columns} for item in items],
            "headers": [{"field": name, "label": label_of(name)} for name in shown],
            "cells": lists.row_cells(actor, spec, shown, items),
            "page": page, "pageSize": top, "hasMore": len(rows) > top}


def storage_usage(actor: Actor, config: dict[str, Any], _page: int) -> dict[str, Any]:
    """Fill of the visible locations that have a limit (a capacity or a grid), under
    ``locationID`` when given, counted as storage counts them.

    The candidates come first from the location table alone, so storage's visibility
    predicate only meets those ids: driven from ``entity``, SQLite walked every entity the
    reader may see to find the few locations."""
    places = Location.__table__
    candidates = select(places.c.id).where(
        or_(places.c.capacity.is_not(None), places.c.rows.is_not(None)))
    if config.get("locationID"):
        candidates = candidates.where(places.c.parent_id == config["locationID"])
    ids = db.session.scalars(candidates.order_by(places.c.id).limit(MAX_LOCATIONS * 10)).all()
    usage = [row for row in location_usage(actor, ids) if row["capacity"] is not None]
    return {"bars": [{"label": row["name"], "id": row["id"], "value": row["stored"],
                      "capacity": row["capacity"]} for row in usage[:MAX_LOCATIONS]]}


def my_requests(actor: Actor, _config: dict[str, Any], _page: int) -> dict[str, Any]:
    """The open requests assigned to the actor that the actor may see, by due date."""
    rows = db.session.execute(
        select(Request.id, Request.name, Request.status, Request.priority, Request.due_date)
        .where(Request.assignee_id == actor.user_id, readable(actor, Request),
               Request.status.not_in(CLOSED_REQUEST_STATUSES))
        .order_by(Request.due_date.is_(None), Request.due_date, Request.id).limit(50))
    return {"rows": [{"id": row.id, "name": row.name, "status": row.status,
                      "priority": row.priority,
                      "dueDate": row.due_date.isoformat() if row.due_date else None}
                     for row in rows]}


def recent_activity(actor: Actor, config: dict[str, Any], _page: int) -> dict[str, Any]:
    """The latest events of entities the actor may see.

    Events are read newest first in chunks and kept when their entity is visible, so the
    time index drives the query (joined to ``entity`` under the visibility predicate,
    SQLite sorted every visible entity's events). Only the latest
    ``ACTIVITY_CHUNK * ACTIVITY_CHUNKS`` events are looked at."""
    limit = config.get("limit") or 10
    events = EntityEvent.__table__
    found: list[dict[str, Any]] = []
    for chunk in range(ACTIVITY_CHUNKS):
        batch = db.session.execute(
            select(events.c.kind, events.c.user_id, events.c.timestamp_utc,
                   events.c.entity_id)
            .order_by(events.c.timestamp_utc.desc(), events.c.id.desc())
            .limit(ACTIVITY_CHUNK).offset(chunk * ACTIVITY_CHUNK)).all()
        wanted = sorted({row.entity_id for row in batch})
        # The rule's per-entity answer on the few entities named: with the SQL predicate
        # SQLite preferred scanning every visible entity to the primary key.
        visible = {row.id: row for row in db.session.execute(
            select(Entity.id, Entity.eclass, Entity.name, Entity.department_id,
                   Entity.project_id).where(Entity.id.in_(wanted)))
            if access_type(actor, row.eclass, row.department_id, row.project_id) != NONE}
        found += [{"kind": row.kind, "userID": row.user_id, "timestampUtc": row.timestamp_utc,
                   "entityID": row.entity_id, "eClass": visible[row.entity_id].eclass,
                   "name": visible[row.entity_id].name}
                  for row in batch if row.entity_id in visible]
        if len(found) >= limit or len(batch) < ACTIVITY_CHUNK:
            break
    return {"rows": found[:limit]}


def _alert_rules(actor: Actor, rule_id: str | None) -> list[AlertRule]:
    """The rule named if the reader may read it (nothing, as for a rule deleted since),
    or the active rules the reader owns or is told by."""
    if rule_id:
        rule = find_told(actor, rule_id)
        return [rule] if rule is not None else []
    return rules_telling(actor)


def alerts(actor: Actor, config: dict[str, Any], _page: int) -> dict[str, Any]:
    """The items an alert rule matches now that the reader may read (without ``ruleID``:
    each active rule the reader owns or is told by), with names, amounts with their unit
    and places worded as a saved list words them (:mod:`labapp.dashboards.lists`)."""
    now = utc_now()
    shown_rules: list[dict[str, Any]] = []
    for rule in _alert_rules(actor, config.get("ruleID"))[:MAX_ALERT_RULES]:
        try:
            spec, where = rule_condition(rule, now)
        except RuleBroken as error:
            shown_rules.append({"id": rule.id, "name": rule.name, "problem": str(error)})
            continue
        shown = [name for name in ("name", "amount", "expiryDate", "dueDate", "locationID")
                 if name in spec.fields]
        selected = list(dict.fromkeys(["id", *shown, *lists.companions(spec, shown)]))
        visible = (spec.model.eclass == spec.name, readable(actor, spec.model), where)
        count = db.session.scalar(select(func.count()).select_from(spec.model)
                                  .where(*visible)) or 0
        items = [dict(zip(selected, row, strict=True)) for row in db.session.execute(
            select(*(getattr(spec.model, spec.fields[name].stored_attr) for name in selected))
            .where(*visible).order_by(spec.model.name, spec.model.id).limit(ALERT_ITEMS))]
        shown_rules.append({"id": rule.id, "name": rule.name, "eClass": spec.name,
                            "count": count,
                            "headers": [{"field": name, "label": label_of(name)}
                                        for name in shown],
                            "cells": lists.row_cells(actor, spec, shown, items)})
    return {"rules": shown_rules}


def note(_actor: Actor, config: dict[str, Any], _page: int) -> dict[str, Any]:
    """The note's Markdown as sanitised HTML (raw HTML is escaped, then nh3 cleans)."""
    return {"html": nh3.clean(_markdown.render(config["markdown"]))}


@dataclass(frozen=True)
class WidgetType:
    """A built-in widget: its name, title, config schema, data function and the extra
    check of its config (beyond the schema)."""

    name: str
    title: str
    config: type[Schema]
    data: Callable[[Actor, dict[str, Any], int], dict[str, Any]]
    check: Callable[[dict[str, Any]], None] | None = None


WIDGETS: dict[str, WidgetType] = {widget.name: widget for widget in (
    WidgetType("status-counts", "Entities by status", StatusCountsConfig, status_counts),
    WidgetType("created-per-week", "Created per week", CreatedPerWeekConfig, created_per_week),
    WidgetType("saved-list", "Saved list", SavedListConfig, saved_list, check_saved_list),
    WidgetType("storage-usage", "Storage usage", StorageUsageConfig, storage_usage),
    WidgetType("my-requests", "My open requests", MyRequestsConfig, my_requests),
    WidgetType("recent-activity", "Recent activity", RecentActivityConfig, recent_activity),
    WidgetType("note", "Note", NoteConfig, note),
    WidgetType("alerts", "Alerts", AlertsConfig, alerts),
)}


def load_config(name: str, config: Any) -> dict[str, Any]:
    """The config of widget ``name`` loaded through its schema (ValidationError if bad)."""
    widget = WIDGETS[name]
    loaded: dict[str, Any] = widget.config().load(config)
    if "eClass" in loaded:
        loaded["eClass"] = _class_name(loaded["eClass"])
    if widget.check is not None:
        widget.check(loaded)
    return loaded
