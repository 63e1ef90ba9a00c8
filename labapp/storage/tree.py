"""The storage tree: the visible locations level by level, each with how full it is and how
much lies below it.

A biobank has thousands of boxes, so the tree page draws only the top levels — whole levels,
as many as fit :data:`TREE_BUDGET` locations — and a location's children are read when it is
opened (:func:`opened`). A root is a visible location whose parent the viewer may not see
(or that has none), as before.

Counts roll up in SQL, one grouped query per request whatever the number of locations drawn
(:func:`rollup`): a recursive CTE follows the parent links from the drawn locations down,
each location of those subtrees adds the count the database keeps of the items stored in it
(:mod:`labapp.storage.counts`), summed per drawn location. Every item counts, also in
locations or of classes the viewer may not see: the numbers name nothing
(docs/decisions/storage-tree.md). The stored ``hierarchy`` path is not used: names are not
unique, so a name prefix could count a namesake's boxes.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ARRAY,
    ColumnElement,
    String,
    all_,
    any_,
    bindparam,
    case,
    false,
    func,
    literal_column,
    null,
    select,
    text,
    union_all,
)
from sqlalchemy.orm import aliased

from labapp.access.actor import Actor
from labapp.access.visibility import readable
from labapp.db import db
from labapp.model import Entity, Location
from labapp.storage.counts import counted, held
from labapp.storage.service import MAX_DEPTH, get_location, limit_of, name_order

TREE_BUDGET = 300  # locations the tree page draws at most before opening one (whole levels)
_LOCATION = Location.__table__.c


@dataclass
class TreeNode:
    """One visible location of the tree.

    ``stored`` counts the items in it, ``within`` those in it and anywhere below it;
    ``capacity`` is its limit (None: unlimited). ``opens`` says whether it has visible
    children; ``children`` are those, in name order, or None while they have not been read.
    """

    id: str
    name: str
    location_type: str | None
    capacity: int | None
    opens: bool
    stored: int = 0
    within: int = 0
    children: list[TreeNode] | None = None


def _planned_small() -> None:
    """On PostgreSQL, for the rest of the transaction, neither JIT compilation nor parallel
    workers: it guesses tens of thousands of rows for any recursive walk, so the tree's
    plans cost more than ``jit_above_cost`` (compiling one took 0.05-0.8 s for a query of a
    few ms) and the counts per location were summed by two workers that took ~25 ms to start
    for 5 ms of work (bench/runs/2026-11-28-million.md, its plan)."""
    if db.engine.dialect.name == "postgresql":
        db.session.execute(text("SET LOCAL jit = off"))
        db.session.execute(text("SET LOCAL max_parallel_workers_per_gather = 0"))


def _among(column: Any, ids: Sequence[str], *, among: bool = True) -> ColumnElement[bool]:
    """``column IN ids`` (``NOT IN`` when not ``among``); on PostgreSQL with the ids as one
    array parameter, so the statement's text is the same whatever their number: psycopg
    parsed the hundreds of placeholders of the tree's statements anew on every request."""
    predicate: ColumnElement[bool]
    if db.engine.dialect.name != "postgresql":
        predicate = column.in_(ids) if among else column.not_in(ids)
    else:
        array = bindparam(None, list(ids), type_=ARRAY(String))
        predicate = column == any_(array) if among else column != all_(array)
    return predicate


def _nodes(actor: Actor, where: ColumnElement[bool],
           limit: int | None = None) -> list[tuple[str | None, TreeNode]]:
    """``(parent id, node)`` of the visible locations matching ``where`` (at most ``limit``
    of them, any), by :func:`~labapp.storage.service.name_order`; each knows whether it has a
    visible child. That is a probe per location that stops at the first child: a
    ``LIMIT 1`` subquery, which PostgreSQL cannot turn, as it did an ``EXISTS``, into one
    hashed pass over every location and its entity (13 of 22 ms for the 200 racks of a
    biobank, 10,000 boxes)."""
    child, child_entity = Location.__table__.alias("child"), aliased(Entity, name="child_entity")
    opens = (select(literal_column("1")).select_from(child)
             .join(child_entity, child_entity.id == child.c.id)
             .where(child.c.parent_id == Location.id, readable(actor, child_entity))
             .limit(1).scalar_subquery())
    query = (select(Location.id, Location.name, Location.location_type, Location.parent_id,
                    Location.capacity, Location.rows, Location.columns, opens.label("opens"))
             .where(where, readable(actor, Location)).limit(limit))
    rows = sorted(db.session.execute(query), key=lambda row: name_order(row.name, row.id))
    return [(row.parent_id,
             TreeNode(row.id, row.name, row.location_type,
                      limit_of(row.capacity, row.rows, row.columns), row.opens is not None,
                      children=None if row.opens is not None else []))
            for row in rows]


def _roots(actor: Actor) -> list[TreeNode]:
    """The top of the viewer's tree: the visible locations without a parent, and those whose
    parent they may not see. Two queries rather than one ``OR``, which PostgreSQL guessed
    to match half the locations (and then planned for that). The hidden parents are looked
    for among the locations that are a parent (a few hundred of a biobank's 10,000): asked
    among every location, PostgreSQL read all of them with their entities (25 ms)."""
    hidden = aliased(Entity)
    parents = (select(_LOCATION.parent_id.label("id")).where(_LOCATION.parent_id.is_not(None))
               .distinct().subquery("parents"))
    under_hidden = Location.parent_id.in_(
        select(hidden.id).join(parents, parents.c.id == hidden.id)
        .where(~func.coalesce(readable(actor, hidden), false())))
    nodes = [node for where in (Location.parent_id.is_(None), under_hidden)
             for _, node in _nodes(actor, where)]
    return sorted(nodes, key=lambda node: name_order(node.name, node.id))


def top_levels(actor: Actor, budget: int | None = None) -> list[TreeNode]:
    """The roots of the viewer's tree and, level by level, the children of what is drawn
    while a whole level fits ``budget`` locations in all (default :data:`TREE_BUDGET`; the
    roots are always drawn). Nodes of the deepest level keep ``children`` None."""
    budget = TREE_BUDGET if budget is None else budget
    _planned_small()
    roots = _roots(actor)
    drawn, level = list(roots), roots
    while level:
        parents = {node.id: node for node in level if node.opens}
        room = budget - len(drawn)
        if not parents or room <= 0:
            break
        # One read of the level, cut short one past the room: more than that is not drawn.
        below = _nodes(actor, _among(Location.parent_id, list(parents)), limit=room + 1)
        if len(below) > room:
            break
        children: dict[str, list[TreeNode]] = {key: [] for key in parents}
        for parent_id, node in below:
            children[str(parent_id)].append(node)
        for key, node in parents.items():
            node.children = children[key]
        level = [node for _, node in below]
        drawn.extend(level)
    _count(drawn)
    return roots


def opened(actor: Actor, location_id: str) -> TreeNode:
    """One visible location with its visible children, all with their counts (404 when the
    viewer may not see it)."""
    get_location(actor, location_id)
    _planned_small()
    (_, node), = _nodes(actor, Location.id == location_id)
    node.children = [child for _, child in _nodes(actor, Location.parent_id == location_id)]
    _count([node, *node.children])
    return node


def _count(nodes: Sequence[TreeNode]) -> None:
    counts = rollup([node.id for node in nodes])
    for node in nodes:
        node.stored, node.within = counts.get(node.id, (0, 0))


def rollup(location_ids: Sequence[str]) -> dict[str, tuple[int, int]]:
    """``location id → (items stored in it, items in it and anywhere below it)``, in one
    query. Counts every item, also in locations and of departments the caller may not see
    (the caller has checked ``location_ids`` are visible). A sample on a plate counts as the
    plate.

    The walk starts at every location asked for and never enters one of them from above, so
    each location below is visited once, under the nearest location asked for; the query
    also answers, for each location asked for, the nearest one above it, and the partial
    sums are added up that short chain here.
    """
    wanted = list(dict.fromkeys(location_ids))
    if not wanted:
        return {}
    below: Any = select(_LOCATION.id.label("top"), _LOCATION.id.label("id"),
                        literal_column("0").label("depth")).where(
        _among(_LOCATION.id, wanted)).cte("below", recursive=True)
    below = below.union_all(select(below.c.top, _LOCATION.id, below.c.depth + 1).where(
        _LOCATION.parent_id == below.c.id, _among(_LOCATION.id, wanted, among=False),
        below.c.depth < MAX_DEPTH))  # the depth stops a cycle in corrupt data
    per = _held(below)
    # Grouped by whether the row is the location itself, so ``n`` (a count per location
    # below when opening one) appears once and is evaluated once per location.
    own = case((per.c.id == per.c.top, 1), else_=0)
    held = (select(literal_column("'held'"), per.c.top, null(), own, func.sum(per.c.n))
            .group_by(per.c.top, own))
    child = Location.__table__.alias("child")
    links = (select(literal_column("'link'"), child.c.id, below.c.top, literal_column("0"),
                    literal_column("0"))
             .join_from(child, below, below.c.id == child.c.parent_id)
             .where(_among(child.c.id, wanted)))
    _planned_small()
    stored, partial = dict.fromkeys(wanted, 0), dict.fromkeys(wanted, 0)
    inside: dict[str, list[str]] = {key: [] for key in wanted}
    for kind, key, above, here, count in db.session.execute(union_all(held, links)):
        if kind == "link":
            inside[above].append(key)
        else:
            stored[key] += int(count or 0) if here else 0
            partial[key] += int(count or 0)
    totals: dict[str, int] = {}

    def total(key: str) -> int:
        if key not in totals:
            totals[key] = partial[key] + sum(total(child) for child in inside[key])
        return totals[key]
    return {key: (stored[key], total(key)) for key in wanted}


def _held(below: Any) -> Any:
    """``(top, id, n)``: the items ``n`` stored in each location ``id`` of the walk, from the
    counts the database keeps per location (:mod:`labapp.storage.counts`). Counting the
    stored items themselves, an index probe per location, was ~80% of the tree page on
    PostgreSQL at 500,000 tubes in 10,000 boxes (bench/runs/2026-11-25-million-2.md).
    PostgreSQL joins the walk with the counts of every location in one pass (69 against 100
    ms probing them per location at 10,000 boxes); SQLite probes (49 against 58 ms joined):
    its lookups cost no more than a row of the join."""
    if db.engine.dialect.name == "postgresql":
        counts = counted()
        return (select(below.c.top, below.c.id, func.coalesce(counts.c.n, 0).label("n"))
                .select_from(below.outerjoin(counts, counts.c.location_id == below.c.id))
                .subquery("per"))
    return select(below.c.top, below.c.id, held(below.c.id).label("n")).subquery("per")
