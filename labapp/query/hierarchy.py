"""The hierarchy of an entity: its ancestors and its tree of descendants (decisions §8).

The parent of an entity is the target of the first link of :func:`hierarchy_links` that is
set on it, in the order listed: a Sample with both a parent sample and a step hangs under the
sample. The links are the registry's parent links (``PARENT_LINKS``) followed, for Samples and
Plates, by ``locationID``: material without a parent, step, experiment or plate hangs under
the place it is stored, so a storage location's tree shows its contents. (A Sample's
``originID`` is not a parent link: a clone's origin is its source, not its parent.)

Every entity shown passes the one visibility rule: an invisible ancestor ends the breadcrumb
there, invisible descendants (and everything below them) are left out. Both directions stop
after :data:`MAX_DEPTH` levels and never visit an entity twice, so cyclic data terminates.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sqlalchemy import ColumnElement, and_, func, literal, or_, select, union_all

from labapp.access.actor import Actor
from labapp.access.visibility import readable
from labapp.db import db
from labapp.errors import NotFound
from labapp.model import Entity
from labapp.model.registry import (
    PARENT_LINKS,
    ClassSpec,
    FieldSpec,
    classes,
    existing_class,
    generation,
)
from labapp.query.listing import Page
from labapp.reading.lookup import load_visible, to_api

MAX_DEPTH = 10
_STORED_CLASSES = ("Sample", "Plate")
# Within its class, children are listed by this field first when the class has it (the
# Steps of an experiment in step order; one without an index after those with one).
ORDER_FIELD = "stepIndex"
# The class whose entities are counted under each child of a page (:func:`sample_counts`).
COUNTED_CLASS = "Sample"
# Ids per IN (...) list: far below the bound-parameter limits of SQLite and PostgreSQL.
_CHUNK = 500
_derived: dict[str, Any] = {"generation": None}


def hierarchy_links() -> dict[str, tuple[str, ...]]:
    """Per class, the API names of its links in the order they are tried."""
    links: dict[str, tuple[str, ...]] = _current()["links"]
    return links


def _current() -> dict[str, Any]:
    """The links and the class order of the registry's current model (extension classes
    come and go with a sync), recomputed when the model changed."""
    if _derived["generation"] != generation():
        links = {name: links + (("locationID",) if name in _STORED_CLASSES else ())
                 for name, links in PARENT_LINKS.items()}
        _derived.update(
            links=links,
            order={spec.name: index for index, spec in enumerate(classes())},
            fields={name: tuple(existing_class(name).fields[link] for link in names)
                    for name, names in links.items()},
            generation=generation())
    return _derived


def _links() -> dict[str, tuple[FieldSpec, ...]]:
    fields: dict[str, tuple[FieldSpec, ...]] = _current()["fields"]
    return fields


def _class_order() -> dict[str, int]:
    order: dict[str, int] = _current()["order"]
    return order


def parent_id(entity: Entity) -> str | None:
    """The id the entity hangs under: the first set link of its class, or None."""
    for link in _links().get(entity.eclass, ()):
        value: str | None = getattr(entity, link.stored_attr)
        if value is not None:
            return value
    return None


def _chunks(ids: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(ids), _CHUNK):
        yield ids[start:start + _CHUNK]


def _conditions(parents: Mapping[str, str]) -> Iterator[tuple[ClassSpec, ColumnElement[bool]]]:
    """For every class with a link that can point at one of ``parents`` (id → class), and
    every chunk of their ids: the class and the SQL picking its rows whose parent is in the
    chunk. Written link by link ("this link is one of the ids and every earlier link is
    empty") so that each link's index can serve it."""
    wanted = set(parents.values())
    ids = sorted(parents)
    for name, links in _links().items():
        spec = existing_class(name)
        usable = [index for index, link in enumerate(links)
                  if link.ref == "*" or link.ref in wanted]
        for chunk in _chunks(ids) if usable else ():
            yield spec, or_(*(and_(spec.column(links[index]).in_(chunk),
                                   *(spec.column(earlier).is_(None)
                                     for earlier in links[:index]))
                              for index in usable))


def _children_of(actor: Actor, parents: Mapping[str, str]) -> dict[str, list[Entity]]:
    """The visible entities hanging under ``parents`` (id → class), grouped by parent id,
    each group in class order (as the registry lists the classes), then by step index
    (Steps), name and id."""
    grouped: dict[str, list[Entity]] = defaultdict(list)
    for spec, condition in _conditions(parents):
        for child in db.session.scalars(select(spec.model).where(
                condition, readable(actor, spec.model))):
            parent = parent_id(child)
            if parent is not None:  # the condition chose children of ``parents``
                grouped[parent].append(child)
    for children in grouped.values():
        children.sort(key=lambda child: (_class_order()[child.eclass], *_index_key(child),
                                         child.name or "", child.id))
    return grouped


def _index_key(entity: Entity) -> tuple[bool, int]:
    """Where :data:`ORDER_FIELD` puts the entity among its class: by index, none last."""
    field = existing_class(entity.eclass).fields.get(ORDER_FIELD)
    index = getattr(entity, field.stored_attr) if field is not None else None
    return (index is None, index or 0)


def _index_order(spec: ClassSpec) -> list[ColumnElement[Any]]:
    """The ORDER BY terms of :data:`ORDER_FIELD` in ``spec`` (none when it lacks it),
    entities without an index last on both databases."""
    if ORDER_FIELD not in spec.fields:
        return []
    column = spec.column(spec.fields[ORDER_FIELD])
    return [column.is_(None), column]


def _with_children(actor: Actor, parents: Mapping[str, str]) -> set[str]:
    """The ids among ``parents`` (id → class) that have at least one visible child other
    than themselves."""
    found: set[str] = set()
    for spec, condition in _conditions(parents):
        columns = [spec.column(link) for link in _links()[spec.name]]
        parent = columns[0] if len(columns) == 1 else func.coalesce(*columns)
        found.update(db.session.scalars(
            select(parent).select_from(spec.model)
            .where(condition, spec.model.id != parent, readable(actor, spec.model))
            .distinct()))
    return found


def _visible(actor: Actor, entity_id: str) -> Entity | None:
    """The entity with this id, of whatever class, if the actor may see it."""
    return db.session.scalar(select(Entity).where(Entity.id == entity_id, readable(actor)))


def _ancestors(actor: Actor, entity: Entity) -> list[Entity]:
    """Visible ancestors, root first, up to the first invisible (or missing) one."""
    chain: list[Entity] = []
    seen = {entity.id}
    above = parent_id(entity)
    while above is not None and above not in seen and len(chain) < MAX_DEPTH:
        parent = _visible(actor, above)
        if parent is None:
            break
        chain.append(parent)
        seen.add(above)
        above = parent_id(parent)
    chain.reverse()
    return chain


def _descendants(actor: Actor, root: Entity) -> list[dict[str, Any]]:
    """The tree below ``root``, level by level (one query per class and level)."""
    branches: dict[str, list[dict[str, Any]]] = {root.id: []}
    frontier = {root.id: root.eclass}
    for _level in range(MAX_DEPTH):
        if not frontier:
            break
        grouped = _children_of(actor, frontier)
        frontier = {}
        for above, children in grouped.items():
            for child in children:
                if child.id in branches:  # cyclic data: already in the tree
                    continue
                node = {**to_api(child), "children": []}
                branches[above].append(node)
                branches[child.id] = node["children"]
                frontier[child.id] = child.eclass
    return branches[root.id]


def entity_hierarchy(actor: Actor, spec: ClassSpec, entity_id: str) -> dict[str, Any]:
    """``{entity, ancestors: [root … direct parent], children: [{…fields, children}]}``.

    Raises NotFound (404) when the entity does not exist or the actor may not see it.
    """
    entity = load_visible(actor, spec, entity_id)
    return {"entity": to_api(entity, spec),
            "ancestors": [to_api(ancestor) for ancestor in _ancestors(actor, entity)],
            "children": _descendants(actor, entity)}


def ancestor_entities(actor: Actor, spec: ClassSpec, entity_id: str) -> list[dict[str, Any]]:
    """The visible ancestors of an entity, root first (the breadcrumb), without walking the
    tree below it. Raises NotFound (404) when the actor may not see the entity."""
    entity = load_visible(actor, spec, entity_id)
    return [to_api(ancestor) for ancestor in _ancestors(actor, entity)]


def child_page(actor: Actor, entity_id: str, *, limit: int | None = None,
               offset: int = 0) -> Page:
    """One page of the tree's next level, for lazy loading: the visible children of the
    entity in class order (as the registry lists the classes), then by step index (Steps),
    name and id, each
    with its fields and ``hasChildren``; ``total`` counts the whole level. Without ``limit``
    the whole level. Raises NotFound (404) when the entity does not exist or the actor may
    not see it.

    One query counts the children of every class, one per class on the page reads them,
    and one per class says which of them have children: a freezer with thousands of boxes
    costs no more than one with ten.
    """
    entity = _visible(actor, entity_id)
    if entity is None:
        raise NotFound(f"No entity {entity_id!r}.")
    parts = sorted(((spec, and_(condition, spec.model.id != entity.id,
                                readable(actor, spec.model)))
                    for spec, condition in _conditions({entity.id: entity.eclass})),
                   key=lambda part: _class_order()[part[0].name])
    counts = {name: count for name, count in db.session.execute(union_all(*(
        select(literal(spec.name), func.count()).select_from(spec.model).where(condition)
        for spec, condition in parts)))} if parts else {}
    children: list[Entity] = []
    start = 0
    for spec, condition in parts:
        count = counts.get(spec.name, 0)
        end = offset + limit if limit is not None else None
        if count and (end is None or start < end) and offset < start + count:
            skip = max(offset - start, 0)
            take = None if end is None else min(end - start, count) - skip
            children.extend(db.session.scalars(
                select(spec.model).where(condition)
                .order_by(*_index_order(spec), spec.model.name, spec.model.id)
                .offset(skip).limit(take)))
        start += count
    having = _with_children(actor, {child.id: child.eclass for child in children})
    data = [{**to_api(child), "hasChildren": child.id in having} for child in children]
    return Page(data=data, total=start, skip=offset,
                size=limit if limit is not None else start)


def sample_counts(actor: Actor, parents: Mapping[str, str]) -> dict[str, int]:
    """``id → number of visible Samples that name it`` as their parent sample, step,
    experiment, plate or storage location (the links of :func:`hierarchy_links`), for those
    of ``parents`` (id → class) a Sample can name, 0 included. One grouped query for all."""
    spec = existing_class(COUNTED_CLASS)
    counts: dict[str, int] = {}
    parts = []
    for link in _links().get(COUNTED_CLASS, ()):
        named = sorted(entity_id for entity_id, eclass in parents.items()
                       if link.ref in (eclass, "*"))
        if named:
            counts.update(dict.fromkeys(named, 0))
            column = spec.column(link)
            parts.append(select(column, func.count()).where(
                column.in_(named), spec.model.id != column, readable(actor, spec.model))
                .group_by(column))
    if parts:
        for parent, samples in db.session.execute(union_all(*parts)):
            counts[parent] += samples
    return counts


def child_entities(actor: Actor, entity_id: str) -> list[dict[str, Any]]:
    """The whole next level of the tree below the entity (:func:`child_page` unpaged)."""
    return child_page(actor, entity_id).data
