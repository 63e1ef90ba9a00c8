"""Search over every entity the caller may see (decisions §9): exact, like, full-text and the
merged search.

Exact and like run in SQL on the common ``entity`` table (id, name, barcode) through the
visibility predicate; full-text asks the search backend (:mod:`labapp.search.backend`) with
the caller's access labels, then loads the entities it names through the same predicate (a
document can lag a change by the time the queue takes to drain; the row read is current).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Integer,
    String,
    column,
    func,
    literal,
    literal_column,
    or_,
    select,
    table,
)

from labapp.access.actor import Actor
from labapp.access.labels import actor_labels
from labapp.access.visibility import readable
from labapp.db import db
from labapp.errors import AppError, InvalidInput
from labapp.model import Entity
from labapp.model.registry import find_class
from labapp.query.entity_suggest import TRIGRAM
from labapp.query.filter import compile_filter
from labapp.query.listing import parse_paging
from labapp.query.textmatch import fold, like_pattern
from labapp.reading.lookup import to_api
from labapp.search import analysis, backend
from labapp.search.fields import common_fields

MAX_TERM = 256
DEFAULT_TOP, MAX_TOP = 50, 500
CANDIDATES = 2000  # full-text matches checked against a $filter
EXACT, LIKE, FULLTEXT = "exact", "like", "fulltext"
_CLAUSE = re.compile(r'"([^"]*)"|(\S+)')
_PREFIX_MIN = 2
_LIKE_ESCAPE = "/"  # the escape character of textmatch.like_pattern
# The folded search text "id␟name␟barcode" of the suggestion-indexes migration: PostgreSQL's
# generated column (pg_trgm GIN index), SQLite's trigger-kept table and its FTS5 trigram table.
_entity_search_text = literal_column("entity.search_text", String)
_search_text = table("entity_search_text", column("key", Integer), column("entity_id", String),
                     column("folded", String))
_trigram_hits = table("entity_search", column("rowid", Integer), column("entity_search", String))
# The visibility columns as ``col || ''``, which no index serves (_visibility_columns).
_UNINDEXED = SimpleNamespace(eclass=Entity.eclass + "", department_id=Entity.department_id + "",
                             project_id=Entity.project_id + "")


class SearchUnavailable(AppError):
    """503: the full-text index is missing or damaged."""

    status, code, title = 503, "search_index_unavailable", "Search index unavailable"


@dataclass(frozen=True)
class SearchResult:
    """``data``: entity objects, each with ``score`` and ``matchedBy``; ``total``: how many
    matched (``total_exact`` False: at least that many)."""

    data: list[dict[str, Any]]
    total: int
    total_exact: bool = True


@dataclass(frozen=True)
class _Matches:
    ids: list[tuple[str, float]]
    total: int
    exact: bool = True


def check_term(term: str) -> str:
    """The term, stripped; 400 when it is empty or longer than :data:`MAX_TERM`."""
    if len(term) > MAX_TERM:
        raise InvalidInput(f"The search term is longer than {MAX_TERM} characters.",
                           code="invalid_term")
    if not term.strip():
        raise InvalidInput("The search term is empty.", code="invalid_term")
    if "\x00" in term:
        raise InvalidInput("NUL characters are not allowed in the search term.",
                           code="invalid_term")
    return term.strip()


def parse_top(top: str | None) -> int:
    """``$top``: 50 when absent, at most 500; 400 when not a non-negative integer."""
    return DEFAULT_TOP if top is None else parse_paging(top, None, MAX_TOP)[0]


def clauses(term: str) -> list[analysis.Clause]:
    """The full-text clauses of a term: ``"a phrase"``, ``word*`` (a prefix when at least
    two characters precede the ``*``) and words, all AND-ed. Nothing is a syntax error: an
    unbalanced quote is a plain word."""
    found: list[analysis.Clause] = []
    for phrase, word in _CLAUSE.findall(term):
        if phrase:
            found.append((analysis.PHRASE, phrase))
        elif word.endswith("*") and len(word.rstrip("*")) >= _PREFIX_MIN:
            found.append((analysis.PREFIX, word.rstrip("*")))
        else:
            found.append((analysis.WORD, word.strip('*"')))
    return [(kind, text) for kind, text in found if analysis.analyse(text)]


def _condition(actor: Actor, filter_text: str | None) -> ColumnElement[bool]:
    return compile_filter(filter_text, common_fields(), user_id=actor.user_id)


def _exact(actor: Actor, term: str, filter_text: str | None, top: int) -> _Matches:
    where = (or_(Entity.id == term, Entity.name == term, Entity.barcode == term),
             readable(actor), _condition(actor, filter_text))
    ids = db.session.execute(select(Entity.id).where(*where)
                             .order_by(Entity.id).limit(MAX_TOP)).scalars().all()
    return _Matches([(entity_id, 1.0) for entity_id in ids[:top]], len(ids))


def _like_pattern(text: str) -> ColumnElement[str]:
    """The LIKE pattern ``text`` (``%…%`` around the term), ASCII case folded."""
    pattern = literal(text, String())
    if db.engine.dialect.name == "postgresql":
        return func.lower(pattern.collate("C"))
    return pattern


def _like_column(column: Any) -> ColumnElement[Any]:
    if db.engine.dialect.name == "postgresql":
        return func.lower(column.collate("C"))
    plain: ColumnElement[Any] = column
    return plain


def _longest_literal(term: str) -> str:
    """The longest run of the folded term without a wildcard (what a trigram index can
    look up)."""
    return max(re.split(r"[%_]", fold(term)), key=len)


def _visibility_columns() -> Any:
    """The columns the visibility predicate reads: unindexed on SQLite, which keeps no
    statistics and would otherwise read every entity of the caller's departments through
    their indexes instead of looking a few ids up by key."""
    return _UNINDEXED if db.engine.dialect.name == "sqlite" else Entity


def _like_candidates(text: str, escape: str | None, literal_run: str) -> ColumnElement[bool]:
    """The entities whose folded search text (id, name and barcode joined, see
    :mod:`labapp.query.entity_suggest`) matches the pattern ``text``: a superset of the
    matches that a trigram index finds for ``literal_run`` when it has three characters."""
    if db.engine.dialect.name == "postgresql":
        # The pattern folded here, a plain value: as ``lower(:pattern COLLATE "C")`` the
        # planner cannot estimate it and scans the table instead of the trigram index.
        return _entity_search_text.like(literal(fold(text), String()), escape=escape)
    found = select(_search_text.c.entity_id).where(
        _search_text.c.folded.like(literal(text, String()), escape=escape))
    if len(literal_run) >= TRIGRAM:
        found = found.join(_trigram_hits, _trigram_hits.c.rowid == _search_text.c.key).where(
            _trigram_hits.c.entity_search.op("MATCH")('"' + literal_run.replace('"', '""') + '"'))
    return Entity.id.in_(found)


def _like(actor: Actor, term: str, filter_text: str | None, top: int, *,
          wildcards: bool = True) -> _Matches:
    if wildcards:
        # PostgreSQL reads a backslash in a LIKE pattern as an escape (a trailing one is an
        # error); ESCAPE '' turns that off. SQLite has no escape character unless given one.
        text, literal_run = f"%{term}%", _longest_literal(term)
        escape = "" if db.engine.dialect.name == "postgresql" else None
    else:
        text, literal_run, escape = like_pattern(term, "%{}%"), fold(term), _LIKE_ESCAPE
    pattern = _like_pattern(text)
    matched = or_(*(_like_column(column).like(pattern, escape=escape)
                    for column in (Entity.id, Entity.name, Entity.barcode)))
    # The candidates come from the trigram-indexed search text; each is then checked column
    # by column (a match across two values is no match).
    where = (_like_candidates(text, escape, literal_run), matched,
             readable(actor, _visibility_columns()), _condition(actor, filter_text))
    # Sorted by ``name || ''``, which no index serves: ordered by the name index, PostgreSQL
    # walks it from the start filtering each row until it has ``top`` (all of it for a rare
    # term) instead of sorting the few candidates the trigram index finds.
    # The sort reads every match anyway: ``count(*) OVER ()`` counts them in the same pass
    # (a second query for ``total`` rechecked every trigram candidate again).
    # At least one row is read even for ``$top=0``: it carries the total.
    rows = db.session.execute(select(Entity.id, func.count().over()).where(*where)
                              .order_by(Entity.name + "", Entity.id).limit(max(top, 1))).all()
    return _Matches([(entity_id, 1.0) for entity_id, _total in rows[:top]],
                    rows[0][1] if rows else 0)


def _fulltext(actor: Actor, term: str, filter_text: str | None, top: int) -> _Matches:
    parsed = clauses(term)
    condition = _condition(actor, filter_text)  # a bad $filter is 400 before any search
    if not parsed:
        return _Matches([], 0)
    limit = CANDIDATES if filter_text else top
    try:
        hits = backend.current().search(parsed, labels=actor_labels(actor), eclasses=None,
                                        limit=limit)
    except analysis.IndexUnavailable as error:
        raise SearchUnavailable(
            f"{error} Ask the operator to run `flask --app labapp search rebuild`.") from None
    if not filter_text:
        return _Matches(hits.items, hits.total, hits.exact)
    passing = set(db.session.scalars(select(Entity.id).where(
        Entity.id.in_([entity_id for entity_id, _ in hits.items]), condition)))
    kept = [(entity_id, score) for entity_id, score in hits.items if entity_id in passing]
    # Only the best CANDIDATES were filtered: more may pass among the rest.
    return _Matches(kept[:top], len(kept), hits.total <= len(hits.items))


def _like_as_typed(actor: Actor, term: str, filter_text: str | None, top: int) -> _Matches:
    """``like`` with the term's ``%`` and ``_`` taken literally: the merged search's step."""
    return _like(actor, term, filter_text, top, wildcards=False)


_MODES = {EXACT: _exact, LIKE: _like, FULLTEXT: _fulltext}
# The search box types what it means: only the like mode asked by name reads wildcards.
_MERGED = {EXACT: _exact, LIKE: _like_as_typed, FULLTEXT: _fulltext}


def _load(actor: Actor, found: list[tuple[str, float, str]]) -> list[dict[str, Any]]:
    """The visible entities of ``found`` (id, score, mode) in that order, as API objects.

    One query finds the visible ids and their classes, then one per class present loads
    them (an outer join over every class table cost more than the search itself).
    """
    if not found:
        return []
    by_class: dict[str, list[str]] = {}
    for entity_id, eclass in db.session.execute(select(Entity.id, Entity.eclass).where(
            Entity.id.in_([entity_id for entity_id, _, _ in found]),
            readable(actor, _visibility_columns()))):
        by_class.setdefault(eclass, []).append(entity_id)
    loaded: dict[str, dict[str, Any]] = {}
    for eclass, ids in by_class.items():
        spec = find_class(eclass)
        if spec is None:  # a class a data-model sync removed: no API object to show
            continue
        for entity in db.session.scalars(select(spec.model).where(spec.model.id.in_(ids))):
            loaded[entity.id] = to_api(entity, spec)
    return [{**loaded[entity_id], "score": score, "matchedBy": mode}
            for entity_id, score, mode in found if entity_id in loaded]


def search(actor: Actor, mode: str, term: str, *, filter_text: str | None = None,
           top: str | None = None) -> SearchResult:
    """One search mode (``exact``, ``like`` or ``fulltext``) over the entities the actor may
    see. 400 for a bad term, ``$filter`` or ``$top``; 503 when the index is unavailable."""
    term, limit = check_term(term), parse_top(top)
    matches = _MODES[mode](actor, term, filter_text, limit)
    data = _load(actor, [(entity_id, score, mode) for entity_id, score in matches.ids])
    return SearchResult(data, matches.total, matches.exact)


def search_all(actor: Actor, term: str, *, filter_text: str | None = None,
               top: str | None = None) -> SearchResult:
    """The merged search: exact matches first, then like (``%`` and ``_`` taken as typed),
    then full-text by score, each entity once. ``total`` counts the distinct entities among
    each mode's best ``$top``, and is never less than the like or full-text total; it is
    exact when every mode's matches were all among its best."""
    term, limit = check_term(term), parse_top(top)
    merged: dict[str, tuple[str, float, str]] = {}
    totals = []
    exact = True
    for mode, run in _MERGED.items():
        matches = run(actor, term, filter_text, limit)
        totals.append(matches.total)
        exact = exact and matches.exact and matches.total <= len(matches.ids)
        for entity_id, score in matches.ids:
            merged.setdefault(entity_id, (entity_id, score, mode))
    found = list(merged.values())
    data = _load(actor, found[:limit])
    return SearchResult(data, max(len(found), *totals[1:]), exact)



def highlight_words(term: str) -> list[str]:
    """The folded words of a term that a page marks in its results (prefixes without
    their ``*``)."""
    return [word for _kind, text in clauses(term) for word in analysis.analyse(text)]


def fold_word(word: str) -> list[str]:
    """How the index folds one word of shown text (to compare it with
    :func:`highlight_words`)."""
    return analysis.analyse(word)
