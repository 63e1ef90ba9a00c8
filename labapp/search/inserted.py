"""The rows a unit of work inserts itself, kept for the documents a backend that writes in
transactions (PostgreSQL) builds from them before the unit commits.

A bulk create inserts its entities (and their notes and files) with plain Core inserts
(:func:`labapp.entities.create.insert_rows`). Reading those rows back to make their
documents, and the search-queue rows their triggers add, cost a fifth of what indexing in
the transaction added to a bulk create. So such an insert runs with the transaction-local
setting ``labapp.search_queue`` = ``off`` (the triggers skip their rows, migration
``f2a6c8e4b1d7``), and its values are kept in the unit's :class:`Inserted`; at the commit the
indexer makes their documents from them (:mod:`labapp.search.indexer`).

What may not be made from memory is read from the database as before: a row changed again
later in the unit (its trigger queued it), the subject of an inserted note or file that was
not inserted by the unit (its document holds other attachments), and a value the database
would give back otherwise (see :func:`_kept_as_is`). Only plain inserts qualify: no
``ON CONFLICT``, ``RETURNING``, ``VALUES`` or ``SELECT`` of their own, not ORM statements, and
every row naming the columns a document reads (a missing one takes a default the database
decides).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Result, text
from sqlalchemy.orm import ORMExecuteState
from sqlalchemy.sql.dml import Insert

SETTING = "labapp.search_queue"
_QUEUE_OFF = text(f"SELECT set_config('{SETTING}', 'off', true)")
_QUEUE_ON = text(f"SELECT set_config('{SETTING}', 'on', true)")
# The columns of each table a document is made of (labapp.search.indexer._documents).
ENTITY_COLUMNS = ("id", "eclass", "name", "description", "barcode", "attributes",
                  "department_id", "project_id")
_COLUMNS = {"entity": ENTITY_COLUMNS, "note": ("id", "subject_id", "content"),
            "file": ("id", "subject_id")}


@dataclass
class Inserted:
    """What the unit of work inserted without queueing it: ``entities`` (id → the row's
    columns of :data:`ENTITY_COLUMNS`), ``contents`` (note id → its content), ``attachments``
    (note or file id → its subject id) and ``unsure`` (ids whose documents must be read
    from the database all the same)."""

    entities: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    contents: dict[str, str | None] = field(default_factory=dict)
    attachments: dict[str, str | None] = field(default_factory=dict)
    unsure: set[str] = field(default_factory=set)

    def keep(self, table: str, rows: list[Mapping[str, Any]]) -> None:
        """Remember the rows of one insert into ``table`` (see :func:`table_of`)."""
        for row in rows:
            entity_id = row["id"]
            if table == "entity":
                # A copy of the columns, as they went in (the caller's dict may change).
                self.entities[entity_id] = {column: row[column] for column in ENTITY_COLUMNS}
                if not _kept_as_is(row):
                    self.unsure.add(entity_id)
                continue
            if table == "note":
                content = row["content"]
                if content is not None and not isinstance(content, str):
                    self.unsure.add(entity_id)
                self.contents[entity_id] = content
            self.attachments[entity_id] = row["subject_id"]


def table_of(state: ORMExecuteState) -> str | None:
    """The table (``entity``, ``note`` or ``file``) a plain Core insert of ``state`` fills
    when its rows can be kept (see the module docstring), else None."""
    statement = state.statement
    if not (isinstance(statement, Insert) and not state.is_orm_statement
            and statement._values is None and not statement._multi_values
            and statement.select is None and statement._post_values_clause is None
            and not statement._returning):
        return None
    name = getattr(statement.table, "name", None)
    columns = _COLUMNS.get(name or "")
    if columns is None:
        return None
    rows = rows_of(state)
    if not rows or not all(isinstance(row, Mapping) and all(column in row for column in columns)
                           for row in rows):
        return None
    return name


def rows_of(state: ORMExecuteState) -> list[Mapping[str, Any]]:
    """The parameter rows of ``state`` (one or many)."""
    parameters = state.parameters
    if isinstance(parameters, Mapping):
        return [parameters]
    return list(parameters or [])


def insert_unqueued(state: ORMExecuteState) -> Result[Any]:
    """Run the insert of ``state`` with the search-queue triggers skipping its rows."""
    session = state.session
    session.execute(_QUEUE_OFF)
    result = state.invoke_statement()
    session.execute(_QUEUE_ON)
    return result


def _kept_as_is(row: Mapping[str, Any]) -> bool:
    """Whether the database gives the row's searchable values back as they are: text as
    text, and attributes of JSON's own types (a float written with an exponent comes back
    from ``jsonb`` as a whole number spelled out, a word of another spelling)."""
    return all(row[column] is None or isinstance(row[column], str)
               for column in ENTITY_COLUMNS if column != "attributes") and _plain(
        row["attributes"])


def _plain(value: Any) -> bool:
    if value is None or isinstance(value, (str, bool, int)):
        return True
    if isinstance(value, float):
        spelled = repr(value)
        return "e" not in spelled and "n" not in spelled  # no exponent, inf or nan
    if isinstance(value, dict):
        return all(isinstance(key, str) and _plain(item) for key, item in value.items())
    if isinstance(value, list):
        return all(_plain(item) for item in value)
    return False
