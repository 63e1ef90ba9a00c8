"""Reading entities: one with its files, events and audit trail; pages of a class; how many
of each class an actor may see; the names of the entities a page refers to."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from sqlalchemy import (
    ColumnElement,
    CompoundSelect,
    Integer,
    Row,
    Select,
    and_,
    bindparam,
    cast,
    func,
    literal,
    null,
    select,
    text,
    union_all,
)
from sqlalchemy.orm import aliased

from labapp.access.actor import Actor
from labapp.access.visibility import WRITE, ReadRule, access_type, readable
from labapp.db import db
from labapp.errors import NotFound
from labapp.model import AuditEvent, Entity, EntityEvent, File
from labapp.model.registry import ClassSpec, existing_class
from labapp.query.fields import entity_fields
from labapp.query.filter import compile_filter
from labapp.query.listing import (
    Page,
    count_value,
    parse_paging,
    parse_select,
    parse_sort_keys,
)
from labapp.query.paging import Keyset
from labapp.reading.entity_counts import visible_total
from labapp.reading.lookup import load_visible, to_api

# Events that name another entity (a note or file added to this one) in ``data["id"]``.
_NAMING_EVENTS = frozenset({"NoteAdded", "FileAdded"})


def _visible_events(actor: Actor, events: list[Row[Any]]) -> list[Row[Any]]:
    """The events, without those naming a note or file the actor may not see."""
    named = {event.content.get("id") for event in events
             if event.name in _NAMING_EVENTS and isinstance(event.content, dict)}
    named.discard(None)
    visible = set(db.session.scalars(select(Entity.id).where(Entity.id.in_(sorted(named)),
                                                             readable(actor)))) if named else set()
    return [event for event in events
            if event.name not in _NAMING_EVENTS or event.content.get("id") in visible]


@cache
def _history_statement() -> CompoundSelect[Any]:
    """Events and audit events of the ``entity_id`` parameter's entity, newest first, told
    apart by ``source``; built once (building it cost more than running it)."""
    events = select(literal("event").label("source"), EntityEvent.id,
                    EntityEvent.kind.label("name"), cast(null(), Integer).label("version"),
                    EntityEvent.user_id, EntityEvent.timestamp_utc,
                    EntityEvent.data.label("content"))\
        .where(EntityEvent.entity_id == bindparam("entity_id"))
    audits = select(literal("audit"), AuditEvent.id, AuditEvent.action, AuditEvent.version,
                    AuditEvent.user_id, AuditEvent.timestamp_utc, AuditEvent.changes)\
        .where(AuditEvent.entity_id == bindparam("entity_id"))
    return union_all(events, audits).order_by(text("id DESC"))


def _history(entity_id: str) -> tuple[list[Row[Any]], list[Row[Any]]]:
    """The entity's events and audit events, each newest first: one statement (a UNION ALL
    of both tables)."""
    rows = db.session.execute(_history_statement(), {"entity_id": entity_id}).all()
    return ([row for row in rows if row.source == "event"],
            [row for row in rows if row.source == "audit"])


# What access_type needs of the entity row, by model attribute.
_PLACE = ("eclass", "department_id", "project_id")


def _stored(spec: ClassSpec) -> list[str] | None:
    """The model attributes of ``spec``'s fields, in their order; None when one is
    computed."""
    attrs = [field.attr for field in spec.fields.values()]
    return None if None in attrs else [attr for attr in attrs if attr is not None]


@dataclass(frozen=True)
class _DetailRead:
    """The statement that reads one entity of ``spec`` and its visible files of
    ``file_spec``, for actors of one :class:`ReadRule`, as plain columns (no ORM objects):
    the entity's fields, the ``_PLACE`` columns they lack, then the file's fields; a row per
    file in the order they were added (one row, the file's columns null, without files).
    Built once (building and keying it cost more than running it)."""

    spec: ClassSpec
    file_spec: ClassSpec
    statement: Select[Any]
    place: tuple[int, ...]  # where each of ``_PLACE`` sits in a row
    width: int  # the entity's columns
    file_id: int  # where the file's id sits

    def answer(self, rows: Sequence[Row[Any]]) -> tuple[dict[str, Any], tuple[Any, ...],
                                                    list[dict[str, Any]]]:
        first = rows[0]
        file_names = tuple(self.file_spec.fields)
        return (dict(zip(self.spec.fields, first, strict=False)),
                tuple(first[index] for index in self.place),
                [dict(zip(file_names, row[self.width:], strict=True)) for row in rows
                 if row[self.file_id] is not None])


def _detail_read(spec: ClassSpec, file_spec: ClassSpec, rule: ReadRule) -> _DetailRead | None:
    attrs, file_attrs = _stored(spec), _stored(file_spec)
    if attrs is None or file_attrs is None:
        return None
    attrs += [attr for attr in _PLACE if attr not in attrs]
    file: Any = aliased(file_spec.model, flat=True)  # the File model's columns
    statement = (select(*(getattr(spec.model, attr) for attr in attrs),
                        *(getattr(file, attr) for attr in file_attrs))
                 .select_from(spec.model)
                 .outerjoin(file, and_(file.subject_id == spec.model.id, rule.predicate(file)))
                 .where(spec.model.id == bindparam("entity_id"), rule.predicate(spec.model))
                 .order_by(file.created_utc, file.id))
    return _DetailRead(spec, file_spec, statement, tuple(attrs.index(a) for a in _PLACE),
                       len(attrs), len(attrs) + file_attrs.index("id"))


# (class name, rule) → its read; a class or the File class replaced by another model (an
# extension installed) builds it again.
_DETAIL_READS: dict[tuple[str, ReadRule], _DetailRead | None] = {}


def _cached_read(spec: ClassSpec, rule: ReadRule) -> _DetailRead | None:
    """The read of ``spec`` for ``rule``, or None when a field of the class or of ``File``
    is computed (read through ORM objects then)."""
    file_spec = existing_class("File")
    key = (spec.name, rule)
    read = _DETAIL_READS.get(key)
    if read is None or read.spec is not spec or read.file_spec is not file_spec:
        read = _DETAIL_READS[key] = _detail_read(spec, file_spec, rule)
    return read


def _entity_and_files(actor: Actor, spec: ClassSpec, entity_id: str
                      ) -> tuple[dict[str, Any], tuple[Any, ...], list[dict[str, Any]]]:
    """The entity's stored fields, its ``_PLACE`` values and its visible files' fields (in
    the order they were added), in one statement; NotFound when the actor may not see the
    entity."""
    read = _cached_read(spec, ReadRule.of(actor))
    if read is None:
        entity = load_visible(actor, spec, entity_id)
        files = db.session.scalars(select(File).where(File.subject_id == entity.id,
                                                      readable(actor, File))
                                   .order_by(File.created_utc, File.id))
        return (to_api(entity, spec), (entity.eclass, entity.department_id, entity.project_id),
                [to_api(file) for file in files])
    rows = db.session.execute(read.statement, {**ReadRule.parameters(actor),
                                               "entity_id": entity_id}).all()
    if not rows:
        raise NotFound(f"No {spec.name} {entity_id!r}.")
    return read.answer(rows)


def entity_detail(actor: Actor, spec: ClassSpec, entity_id: str) -> dict[str, Any]:
    """Every property plus ``accessType``, ``canWrite``, ``files``, ``events`` and
    ``auditEvents`` (newest first); 404 when the actor may not see the entity.

    Two statements: the entity with its visible files, its events and audit events
    together (a third only when events name notes or files, whose visibility is then
    read). The entity and its files are read as plain rows, by a statement built once per
    class and shape of actor (:class:`ReadRule`); a class with a computed field (``User``'s
    roles) is read through its ORM object and its files by a statement of their own."""
    data, (eclass, department_id, project_id), files = _entity_and_files(actor, spec,
                                                                          entity_id)
    access = access_type(actor, eclass, department_id, project_id)
    data["accessType"] = access
    data["canWrite"] = access == WRITE
    data["files"] = files
    events, audits = _history(data["id"])
    data["events"] = [{"id": event.id, "kind": event.name, "userID": event.user_id,
                       "timestampUtc": event.timestamp_utc, "data": event.content}
                      for event in _visible_events(actor, events)]
    data["auditEvents"] = [{"id": audit.id, "action": audit.name, "version": audit.version,
                            "userID": audit.user_id, "timestampUtc": audit.timestamp_utc,
                            "changes": audit.content} for audit in audits]
    return data


def _entity_side(keyset: Keyset, values: list[Any]) -> list[ColumnElement[bool]]:
    """In id order, the position on ``entity.id`` too: a class's rows join ``entity`` on
    id, and PostgreSQL's merge join read ``entity``'s index from its start up to a position
    bound on the class table's id alone."""
    if len(keyset.keys) > 1:
        return []
    return [Entity.id < values[0] if keyset.keys[0].descending else Entity.id > values[0]]


def list_entities(actor: Actor, spec: ClassSpec, *, filter_text: str | None = None,
                  orderby: str | None = None, select_text: str | None = None,
                  top: str | None = None, skip: str | None = None,
                  skiptoken: str | None = None, count: str | None = None) -> Page:
    """One page of the visible entities of a class (at most 500), with the total count
    unless ``count`` (``$count``) is ``false``.

    With ``skiptoken`` (a page's ``nextSkipToken``) the page starts right after that keyset
    position, no OFFSET, and ``skip`` only counts (docs/decisions/entity-list-skiptoken.md). Raises
    InvalidInput ``invalid_skiptoken`` for a token of another class or ``$orderby``, and
    ``invalid_count`` for a ``count`` neither true nor false. Rows are read as plain
    columns and turned into dicts directly: no ORM objects.
    """
    source = entity_fields(spec)
    limit, offset = parse_paging(top, skip)
    counted = count_value(count, True)
    condition = compile_filter(filter_text, source, user_id=actor.user_id)
    keyset = Keyset.of(f"entity/{spec.name}", parse_sort_keys(orderby, source), spec.model.id)
    values = None if skiptoken is None else keyset.decode(skiptoken)
    wanted = parse_select(select_text, source)
    stored = [name for name, field in spec.fields.items() if field.attr is not None]
    names = [name for name in wanted if not name.startswith("attributes.")] or stored
    attribute_keys = [name for name in wanted if name.startswith("attributes.")]
    if attribute_keys and "attributes" not in names:
        names.append("attributes")
    columns = [getattr(spec.model, spec.fields[name].stored_attr) for name in names]
    visible = (readable(actor, spec.model), condition)
    statement = (select(*columns, *keyset.expressions).where(*visible)
                 .order_by(*keyset.order).limit(limit + 1))
    if values is None:
        statement = statement.offset(offset)
    else:
        statement = statement.where(keyset.after(values), *_entity_side(keyset, values))
    rows = db.session.execute(statement).all()
    width = len(names)
    data = [dict(zip(names, row[:width], strict=True)) for row in rows[:limit]]
    if len(rows) <= limit:
        following = None
    else:  # ``$top=0`` reads no row and stays where it was
        following = keyset.encode(rows[limit - 1][width:]) if limit else skiptoken
    if attribute_keys:
        keep_attributes = "attributes" in wanted
        for item in data:
            attributes = item["attributes"] if keep_attributes else item.pop("attributes")
            for key in attribute_keys:
                item[key] = (attributes or {}).get(key.split(".", 1)[1])
    total = _total(actor, spec, filter_text, visible) if counted else None
    return Page(data=data, total=total, skip=offset, next_token=following)


def count_entities(actor: Actor, spec: ClassSpec, filter_text: str | None) -> int:
    """How many entities of the class the actor may see match ``filter_text`` (a list's
    ``total``; raises FilterError for a filter that does not compile)."""
    condition = compile_filter(filter_text, entity_fields(spec), user_id=actor.user_id)
    return _total(actor, spec, filter_text, (readable(actor, spec.model), condition))


def _total(actor: Actor, spec: ClassSpec, filter_text: str | None,
           visible: tuple[ColumnElement[bool], ...]) -> int:
    """How many visible entities match: without a filter from the tallies (a few rows per
    class and day; counting a million rows took 0.8-1.6 s,
    bench/runs/2026-11-25-million.md), else by counting the matching rows."""
    if not (filter_text or "").strip():
        return visible_total(actor, spec.name)
    return db.session.execute(
        select(func.count()).select_from(spec.model).where(*visible)).scalar_one()


def visible_counts(actor: Actor) -> dict[str, int]:
    """How many entities of each class the actor may see, in one grouped query (a class
    with none is missing from the answer)."""
    rows = db.session.execute(select(Entity.eclass, func.count()).where(readable(actor))
                              .group_by(Entity.eclass))
    return {eclass: count for eclass, count in rows}


def visible_names(actor: Actor, ids: Iterable[str]) -> dict[str, tuple[str, str]]:
    """``id → (class, name)`` of those of ``ids`` the actor may see, in one query (none for
    no ids). An id missing from the answer is unknown or invisible: show it, never a name."""
    wanted = sorted({entity_id for entity_id in ids if entity_id})
    if not wanted:
        return {}
    rows = db.session.execute(select(Entity.id, Entity.eclass, Entity.name)
                              .where(Entity.id.in_(wanted), readable(actor)))
    return {entity_id: (eclass, name) for entity_id, eclass, name in rows}
