"""Entity suggestions for pickers: visible entities whose id, name or barcode contains a query.

Ranking (decisions §8's "best matches first", as docs/decisions/suggestions.md defines it): an
entity's best match counts: an exact match of a whole id, name or barcode first, then a
prefix, then any other contains match; within each, by the matched
text (ASCII case folded), then id. So every column's matches can be read in the order of its
index on ``(eclass, folded(column), id)`` and stopped after ``limit`` rows; the merge keeps the
best ``limit`` (a row that would make the answer is among the first ``limit`` of its column).

The work per request stays small at 100,000 entities of a class
(bench/runs/2026-11-21-dataset-suggest-unique.md):

1. Exact and prefix matches: one index range per column.
2. Only when those are fewer than ``limit``, the other contains matches. Candidates come from
   the search text (id, name and barcode folded and joined by U+001F: PostgreSQL's generated
   column ``entity.search_text``, SQLite's trigger-kept table ``entity_search_text``): a
   trigram index answers queries of three or more characters (``pg_trgm``; SQLite's FTS5
   table ``entity_search``), a scan without any ``lower()`` shorter ones. When there are at
   most :data:`MAX_CANDIDATES`, each is checked exactly, and that is all.
3. More mean a frequent query: each column is *probed* (its first :data:`PROBE_ROWS` index
   entries in order, filtered); a column whose probe yields ``limit`` rows is done. Any other
   column asks the search text for its own candidates (the query between the right
   separators); only a column with too many of those too is read in one pass over the class.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from types import SimpleNamespace
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Integer,
    String,
    case,
    column,
    func,
    literal_column,
    or_,
    select,
    table,
)

from labapp.access.actor import Actor
from labapp.access.visibility import readable
from labapp.db import db
from labapp.model import Entity
from labapp.model.registry import ClassSpec
from labapp.query.textmatch import fold, folded, like_pattern, matches, starts_with

MAX_ENTITIES = 20
SEARCHED = ("id", "name", "barcode")
PROBE_ROWS = 1000
TRIGRAM = 3  # the shortest query a trigram index can answer
MAX_CANDIDATES = 2000
EXACT, PREFIX, CONTAINS = 0, 1, 2

_SELECTED = ("id", "name", "eclass", "barcode")
# The search text (see the suggestion-indexes migration): PostgreSQL's generated column,
# SQLite's trigger-kept table and its FTS5 trigram table.
_entity_search_text = literal_column("entity.search_text", String)
_search_text = table("entity_search_text", column("key", Integer), column("entity_id", String),
                     column("eclass", String), column("folded", String))
_trigram_hits = table("entity_search", column("rowid", Integer), column("entity_search", String))
# Where the query stands in the search text "id␟name␟barcode" (LIKE templates; ␟ = U+001F).
_ANYWHERE = "%{}%"
_IN_COLUMN = {"id": "%{}%\x1f%\x1f%", "name": "%\x1f%{}%\x1f%", "barcode": "%\x1f%\x1f%{}%"}
# The class and visibility columns as ``col || ''``, which no index serves: SQLite keeps no
# statistics and would otherwise read the whole class through those indexes (a MULTI-INDEX
# OR) instead of looking the candidates up by primary key.
_UNINDEXED = SimpleNamespace(eclass=Entity.eclass + "", department_id=Entity.department_id + "",
                             project_id=Entity.project_id + "")


def _sqlite() -> bool:
    return db.engine.dialect.name == "sqlite"


def _rank(query: str, row: Any) -> tuple[int, str, str] | None:
    """``(rank, matched text, id)`` of the row's best match of the folded ``query``."""
    ranks = []
    for value in (row.id, row.name, row.barcode):
        value = fold(value or "")
        if query in value:
            kind = EXACT if value == query else PREFIX if value.startswith(query) else CONTAINS
            ranks.append((kind, value, row.id))
    return min(ranks, default=None)


class _Suggestion:
    """The search of one request: the class, the actor's visibility, the query."""

    def __init__(self, actor: Actor, spec: ClassSpec, query: str, limit: int) -> None:
        self.actor, self.spec, self.query, self.limit = actor, spec, query, limit
        self.best: dict[str, tuple[tuple[int, str, str], Any]] = {}

    def _keep(self, rows: Iterable[Any]) -> None:
        folded_query = fold(self.query)
        for row in rows:
            rank = _rank(folded_query, row)
            if rank is not None and (row.id not in self.best or rank < self.best[row.id][0]):
                self.best[row.id] = (rank, row)

    def _selected(self, source: Any = Entity) -> list[ColumnElement[Any]]:
        return [getattr(source, name) for name in _SELECTED]

    def _in_class(self, source: Any = Entity) -> tuple[ColumnElement[bool], ...]:
        return (source.eclass == self.spec.name, readable(self.actor, source))

    def _read(self, statement: Any) -> list[Any]:
        rows = list(db.session.execute(statement).all())
        self._keep(rows)
        return rows

    def prefixes(self) -> None:
        """Exact and prefix matches: the first ``limit`` of each column's index range."""
        for name in SEARCHED:
            key = folded(getattr(Entity, name))
            self._read(select(*self._selected()).where(
                *self._in_class(), starts_with(key, self.query))
                .order_by(key, Entity.id).limit(self.limit))

    def _probe(self, name: str) -> bool:
        """Matches among the first :data:`PROBE_ROWS` entries of the column's index; True
        when they are the column's first ``limit`` matches."""
        key = folded(getattr(Entity, name)).label("key")
        window = (select(Entity.department_id, Entity.project_id, *self._selected(), key)
                  .where(Entity.eclass == self.spec.name)
                  .order_by(key, Entity.id).limit(PROBE_ROWS).subquery())
        rows = self._read(select(*self._selected(window.c)).where(
            readable(self.actor, window.c), matches(window.c[name], self.query, "%{}%"))
            .order_by(window.c.key, window.c.id).limit(self.limit))
        return len(rows) == self.limit

    def _scan(self, names: Sequence[str]) -> None:
        """The first ``limit`` contains matches of these columns together, in one pass."""
        keys = [case((matches(getattr(Entity, name), self.query, "%{}%"),
                      folded(getattr(Entity, name)))) for name in names]
        key: ColumnElement[Any]
        if len(keys) == 1:
            key = keys[0]
        elif _sqlite():  # SQLite's min() of several values is NULL when any of them is,
            # so each takes the others as its fallbacks: null only when none matched.
            key = func.min(*(func.coalesce(each, *(other for other in keys if other is not each))
                             for each in keys))
        else:
            key = func.least(*keys)
        self._read(select(*self._selected()).where(
            *self._in_class(), or_(*(matches(getattr(Entity, name), self.query, "%{}%")
                                     for name in names)))
            .order_by(key, Entity.id).limit(self.limit))

    def _candidates(self, template: str) -> list[str]:
        """Up to :data:`MAX_CANDIDATES` + 1 ids of the class whose search text matches
        ``template`` around the folded query (see the module's docstring)."""
        needle = fold(self.query)
        pattern = like_pattern(needle, template)
        if not _sqlite():
            statement = select(Entity.id).where(
                Entity.eclass == self.spec.name, _entity_search_text.like(pattern, escape="/"))
        else:
            statement = select(_search_text.c.entity_id).where(
                _search_text.c.eclass == self.spec.name,
                _search_text.c.folded.like(pattern, escape="/"))
            if len(needle) >= TRIGRAM:
                phrase = '"' + needle.replace('"', '""') + '"'
                statement = statement.join(
                    _trigram_hits, _trigram_hits.c.rowid == _search_text.c.key).where(
                    _trigram_hits.c.entity_search.op("MATCH")(phrase))
        return list(db.session.scalars(statement.limit(MAX_CANDIDATES + 1)))

    def _read_candidates(self, template: str) -> bool:
        """Read every match that the search text names for ``template``; False (nothing
        read) when it names more than :data:`MAX_CANDIDATES`."""
        candidates = self._candidates(template)
        if len(candidates) > MAX_CANDIDATES:
            return False
        if candidates:  # each is ranked again: a match across two values is no match
            self._read(select(*self._selected()).where(
                *self._in_class(_UNINDEXED), Entity.id.in_(candidates)))
        return True

    def contains(self) -> None:
        """The other contains matches (see the module's docstring)."""
        if self._read_candidates(_ANYWHERE):
            return
        unfinished = [name for name in SEARCHED if not self._probe(name)
                      and not self._read_candidates(_IN_COLUMN[name])]
        if unfinished:
            self._scan(unfinished)

    def found(self) -> list[dict[str, Any]]:
        ranked = sorted(self.best.values(), key=lambda item: item[0])[:self.limit]
        return [{"id": row.id, "name": row.name, "eClass": row.eclass} for _, row in ranked]

    @property
    def complete(self) -> bool:
        return len(self.best) >= self.limit


def suggest_entities(actor: Actor, spec: ClassSpec, query: str | None,
                     limit: int = MAX_ENTITIES) -> list[dict[str, Any]]:
    """Up to ``limit`` visible entities of the class whose id, name or barcode contains
    ``query``, best first (see the module's docstring): ``[{id, name, eClass}]``. Without
    a query: the first entities by name and id."""
    if not query:
        rows = db.session.execute(select(Entity.id, Entity.name, Entity.eclass).where(
            Entity.eclass == spec.name, readable(actor)).order_by(Entity.name, Entity.id)
            .limit(limit))
        return [{"id": entity_id, "name": name, "eClass": eclass}
                for entity_id, name, eclass in rows]
    search = _Suggestion(actor, spec, query, limit)
    search.prefixes()
    if not search.complete:
        search.contains()
    return search.found()
