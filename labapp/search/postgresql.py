"""The PostgreSQL backend of :class:`labapp.search.backend.SearchBackend`: a table of the
database (``search_document``, migration ``9d4b6e2f8a13``), one row per entity, written in
the transaction of each change. The one module that speaks PostgreSQL's full text.

A row holds the entity's class, its access labels (``varchar[]``, GIN-indexed) and a
``tsvector`` of the words labapp's analyser makes of it
(:func:`labapp.search.analysis.words_of`: identifiers whole and their parts, and adjacent
word pairs), given as quoted lexemes with their positions so PostgreSQL's own parser and
dictionaries never touch them: the words are the ones the Whoosh backend indexes, and a
query asks for the same words (:func:`labapp.search.analysis.terms_of`), so both backends
find the same documents. Queries are ``tsquery`` values built from quoted lexemes: a word,
the pairs of a phrase AND-ed, a prefix as ``'stem':*``.

The edge n-grams Whoosh keeps for prefixes are not stored: the GIN index finds the words
starting with a stem itself, and Whoosh's n-grams only stood in for its slow expansion of a
prefix (and for its cap of 64 expansions, which this backend does not have). Hits are
ranked by ``ts_rank`` (id, name and barcode words weigh most); the order may differ from
Whoosh's, the hits do not. Like Whoosh, a search matching more than :data:`COMMON` documents
is not ranked: its first matches by id come back, and matches are counted up to
:data:`COUNTED` (see :func:`search_statements`).

Nothing is kept in the process: every search reads the current transaction's snapshot, so
a change is found by the next request on any host as soon as it commits.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from sqlalchemy import String, TextClause, bindparam, column, delete, func, select, table, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.exc import DBAPIError

from labapp.db import db
from labapp.search.analysis import (
    COMMON,
    COUNTED,
    Clause,
    Document,
    Hits,
    IndexUnavailable,
    terms_of,
    words_of,
)
from labapp.search.backend import Produce, Progress, Status

TABLE = "search_document"
_documents = table(TABLE, column("entity_id", String), column("eclass", String),
                   column("labels", ARRAY(String)))
# PostgreSQL refuses a lexeme of 2,046 bytes or more; a search term has at most 256
# characters, so longer words could never be asked for anyway.
_LEXEME_BYTES = 2046
_POSITIONS = 8  # positions kept per word: enough for ts_rank to count repeats
# A tsvector holds at most 1 MB: the words of a longer text (a note of megabytes) beyond
# about half of that are left out, rather than failing the change that wrote them.
_VECTOR_BYTES = 512 * 1024
_ENTRY_BYTES = 8  # a lexeme's entry and alignment, roughly
_MAX_POSITION = 16383  # PostgreSQL's largest
# A position as a tsvector's text writes it, made once (formatting it per word was a third
# of what building a document's vector cost); key words' positions weigh A.
_POSITION_TEXT = [str(position) for position in range(_MAX_POSITION + 1)]
_KEY_POSITIONS = [f"{position}A" for position in range(_MAX_POSITION + 1)]
_CHUNK = 1000  # documents per statement
# One statement per chunk: the chunk's columns as arrays, unnested (500 documents as one
# executemany of single-row inserts cost a round trip of the pipeline each, a fifth of what
# indexing adds to a bulk create).
_UPSERT = text(
    f"INSERT INTO {TABLE} (entity_id, eclass, labels, words) "
    "SELECT entity_id, eclass, CAST(labels AS varchar[]), CAST(vector AS tsvector) "
    "FROM unnest(CAST(:ids AS varchar[]), CAST(:eclasses AS varchar[]), "
    "CAST(:labels AS text[]), CAST(:vectors AS text[])) AS d(entity_id, eclass, labels, vector) "
    "ON CONFLICT (entity_id) DO UPDATE SET eclass = excluded.eclass, "
    "labels = excluded.labels, words = excluded.words")

# Locks the rows of the given ids, inserting placeholders where there are none (an insert
# waits for a unit of work that inserts the same id and has not committed yet).
_HOLD = text(
    f"INSERT INTO {TABLE} (entity_id, eclass, labels, words) "
    "SELECT unnest(CAST(:ids AS varchar[])), '', '{}', '' "
    f"ON CONFLICT (entity_id) DO UPDATE SET eclass = {TABLE}.eclass")


def vector(document: Document) -> str:
    """``document``'s ``tsvector`` as text: each of its text words and word pairs, quoted
    (taken as they are, never parsed again), with the positions it has in them (up to
    :data:`_POSITIONS`); the id, name and barcode words, which come first, weigh ``A``, so
    ``ts_rank`` puts a match there before one in other text. New words stop at about
    :data:`_VECTOR_BYTES` (PostgreSQL's limit is 1 MB)."""
    words = words_of(document, prefixes=False)
    keys = words.keys
    positions: dict[str, list[str]] = {}
    size = 0
    for position, word in enumerate(itertools.chain(words.text, words.pairs), start=1):
        kept = positions.get(word)
        if kept is None:
            length = len(word) if word.isascii() else len(word.encode())
            if length >= _LEXEME_BYTES or size + length > _VECTOR_BYTES:
                continue
            kept = positions[word] = []
            size += length + _ENTRY_BYTES
        if len(kept) < _POSITIONS:
            kept.append(_KEY_POSITIONS[position] if position <= keys
                        else _POSITION_TEXT[min(position, _MAX_POSITION)])
            size += 2
    return " ".join(f"{_quoted(word)}:{','.join(found)}" for word, found in positions.items())


def _array(values: list[str]) -> str:
    """``values`` as the text of a PostgreSQL array (each element quoted)."""
    return "{" + ",".join(
        '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"' for value in values) + "}"


def _quoted(lexeme: str) -> str:
    """``lexeme`` as a quoted ``tsquery`` operand (taken as it is, never normalised)."""
    if "\\" in lexeme or "'" in lexeme:
        lexeme = lexeme.replace("\\", "\\\\").replace("'", "''")
    return "'" + lexeme + "'"


def tsquery(clauses: Iterable[Clause]) -> str | None:
    """The ``tsquery`` text of AND-ed clauses; None when one of them matches nothing (or
    there are none)."""
    parts = []
    for kind, clause_text in clauses:
        terms = terms_of(kind, clause_text)
        if terms.nothing:
            return None
        if terms.stem is not None:
            parts.append(_quoted(terms.stem) + ":*")
        elif terms.word is not None:
            parts.append(_quoted(terms.word))
        else:
            parts.append("(" + " & ".join(_quoted(pair) for pair in terms.pairs) + ")")
    return " & ".join(parts) if parts else None


def _where(query: str, labels: frozenset[str] | None,
           eclasses: frozenset[str] | None) -> tuple[str, dict[str, Any]]:
    """The condition of a search for the ``tsquery`` text ``query`` and its parameters."""
    conditions = ["words @@ CAST(:query AS tsquery)"]
    parameters: dict[str, Any] = {"query": query}
    if labels is not None:
        conditions.append("labels && CAST(:labels AS varchar[])")
        parameters["labels"] = sorted(labels)
    if eclasses is not None:
        conditions.append("eclass = ANY(CAST(:eclasses AS varchar[]))")
        parameters["eclasses"] = sorted(eclasses)
    return " AND ".join(conditions), parameters


@dataclass(frozen=True)
class SearchStatements:
    """What :func:`search_statements` returns."""

    count: TextClause
    ranked: TextClause
    unscored: TextClause
    parameters: dict[str, Any]


def search_statements(query: str, *, labels: frozenset[str] | None,
                      eclasses: frozenset[str] | None, limit: int) -> SearchStatements:
    """The statements of a search for the ``tsquery`` text ``query``, with their parameters.

    - ``count``: how many documents match, counted up to :data:`COUNTED` + 1. Counting every
      match of a word in half of 10^6 documents took 100-220 ms (a bitmap of 500,000 rows
      or a scan of the table); stopping after 10,001 takes 6-15 ms. It reads no column of
      the rows, so the GIN indexes (words, labels) answer it where they are worth reading.
    - ``ranked``: the best ``limit`` by ``ts_rank`` (then id), for a search of at most
      :data:`COMMON` matches. Ranking reads every match's ``tsvector``: a word in half of
      10^5 documents took 104 ms at p95 so, ten times that at 10^6.
    - ``unscored``: the first ``limit`` matches by id, for a more common one (what the
      Whoosh backend does above the same count). PostgreSQL walks the primary key and checks
      each row until it has ``limit``: a few hundred rows for a word in half of them.
    """
    where, parameters = _where(query, labels, eclasses)
    parameters.update(limit=limit, counted=COUNTED + 1)
    return SearchStatements(
        text(f"SELECT count(*) FROM (SELECT 1 FROM {TABLE} WHERE {where} LIMIT :counted) "
             "AS matched"),
        text(f"SELECT entity_id, ts_rank(words, CAST(:query AS tsquery)) AS score "
             f"FROM {TABLE} WHERE {where} ORDER BY score DESC, entity_id LIMIT :limit"),
        text(f"SELECT entity_id, 0.0 AS score FROM {TABLE} WHERE {where} "
             "ORDER BY entity_id LIMIT :limit"),
        parameters)


def _chunks(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    iterator = iter(items)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


class PostgresBackend:
    """Search documents in the ``search_document`` table of the application's PostgreSQL
    database, read and written through the current session (its unit of work)."""

    name = "postgresql"
    in_transaction = True

    def exists(self) -> bool:
        """Whether the table is there (the migration made it)."""
        try:
            found = db.session.scalar(select(func.to_regclass(TABLE)))
        except DBAPIError as error:
            raise IndexUnavailable(f"The search documents cannot be read: {error}") from error
        return found is not None

    def check(self) -> None:
        """Raise :class:`IndexUnavailable` unless the table is there."""
        if not self.exists():
            raise IndexUnavailable(f"No table {TABLE} in the database (run the migrations).")

    def write(self, produce: Produce, holding: Sequence[str] = ()) -> None:
        """Upsert the documents ``produce`` returns and delete the rows of the ids it
        returns, in the current unit of work; first lock the rows of the ids ``holding``
        names (a placeholder row for those without one, which ``produce`` then replaces or
        names gone): a unit of work writing one of them meanwhile waits, and one that wrote
        it before has committed before ``produce`` reads."""
        for chunk in _chunks(sorted(holding), _CHUNK):
            db.session.execute(_HOLD, {"ids": chunk})
        documents, gone = produce()
        self._write(documents)
        for chunk in _chunks(gone, _CHUNK):
            db.session.execute(delete(_documents).where(_documents.c.entity_id.in_(chunk)))

    def _write(self, documents: Iterable[Document]) -> int:
        count = 0
        for chunk in _chunks(documents, _CHUNK):
            # One row per id (an upsert may not touch a row twice): the last document wins.
            latest = list({document.id: document for document in chunk}.values())
            db.session.execute(_UPSERT, {
                "ids": [document.id for document in latest],
                "eclasses": [document.eclass for document in latest],
                "labels": [_array(sorted(document.labels)) for document in latest],
                "vectors": [vector(document) for document in latest]})
            count += len(chunk)
        return count

    def search(self, clauses: list[Clause], *, labels: frozenset[str] | None,
               eclasses: frozenset[str] | None, limit: int) -> Hits:
        """How many match (at least :data:`COUNTED`, not exact, above it), and the best
        ``limit`` of them by ``ts_rank`` (then id); above :data:`COMMON` matches the first
        ``limit`` by id, unscored."""
        query = tsquery(clauses)
        if query is None:
            return Hits([], 0)
        statements = search_statements(query, labels=labels, eclasses=eclasses, limit=limit)
        try:
            total = db.session.scalar(statements.count, statements.parameters) or 0
        except DBAPIError as error:
            if isinstance(error.orig, psycopg.errors.UndefinedTable):
                raise IndexUnavailable(f"No table {TABLE} in the database.") from error
            raise
        exact = total <= COUNTED
        total = min(total, COUNTED)
        if not total or not limit:
            return Hits([], total, exact)
        chosen = statements.unscored if total > COMMON else statements.ranked
        rows = db.session.execute(chosen, statements.parameters).all()
        return Hits([(row.entity_id, float(row.score)) for row in rows], total, exact)

    def document_ids(self, labels: frozenset[str] | None) -> set[str]:
        """The ids of the documents a caller holding ``labels`` may see."""
        statement = select(_documents.c.entity_id)
        if labels is not None:
            statement = statement.where(_documents.c.labels.overlap(
                bindparam("labels", sorted(labels), type_=ARRAY(String))))
        return set(db.session.scalars(statement))

    def document_ids_after(self, after: str, limit: int) -> list[str]:
        """A page of the ids of the documents after ``after``, through the primary key."""
        return list(db.session.scalars(
            select(_documents.c.entity_id).where(_documents.c.entity_id > after)
            .order_by(_documents.c.entity_id).limit(limit)))

    def rebuild(self, documents: Iterable[Document], progress: Progress | None = None) -> int:
        """Replace every row by ``documents`` in the current unit of work (searches of other
        transactions see the old rows until it commits)."""
        db.session.execute(delete(_documents))
        count = 0
        for chunk in _chunks(documents, _CHUNK):
            count += self._write(chunk)
            if progress is not None:
                progress(len(chunk))
        return count

    def status(self) -> Status:
        """Rows and the table's size with its indexes (no time of the last write: each
        change writes its row in its own transaction)."""
        self.check()
        documents = db.session.scalar(select(func.count()).select_from(_documents)) or 0
        size = db.session.scalar(select(func.pg_total_relation_size(TABLE)))
        return Status(documents, size, None, f"table {TABLE}")

    def forget(self) -> None:
        """Nothing is kept in the process."""
