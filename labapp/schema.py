"""The database schema's state against the Alembic migrations shipped with the code."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from flask import current_app

from labapp.db import db


@functools.cache
def _expected_heads(directory: str) -> frozenset[str]:
    """The heads of the migration scripts in ``directory``, read once per process: reading
    every script costs far more than the health check's query, and the scripts only change
    with a new release, which restarts the workers."""
    config = Config()
    config.set_main_option("script_location", directory)
    return frozenset(ScriptDirectory.from_config(config).get_heads())


@dataclass(frozen=True)
class SchemaState:
    current: frozenset[str]
    expected: frozenset[str]

    @property
    def up_to_date(self) -> bool:
        return self.current == self.expected


def schema_state() -> SchemaState:
    """The revisions the database is at and the heads the code expects."""
    with db.engine.connect() as connection:
        current = MigrationContext.configure(connection).get_current_heads()
    expected = _expected_heads(str(current_app.extensions["migrate"].directory))
    return SchemaState(frozenset(current), expected)


# Search structures created by the suggestion-indexes migration and not described by the
# models: expression indexes (not reflectable on SQLite), PostgreSQL's generated column
# entity.search_text with its trigram index, SQLite's trigger-kept entity_search_text table and
# its FTS5 table (with the FTS5 shadow tables); the PostgreSQL search backend's table of
# documents and its indexes (labapp/search/postgresql.py, read and written in SQL there).
UNMODELLED_PREFIXES = ("ix_entity_search_", "entity_search", "search_document",
                       "ix_search_document_")
UNMODELLED_COLUMNS = frozenset({("entity", "search_text")})


def compared_in_schema(name: str | None, type_: str, parent_names: dict[str, Any]) -> bool:
    """Alembic ``include_name`` hook: False for the search structures no model describes."""
    if type_ == "column":
        return (parent_names.get("table_name"), name) not in UNMODELLED_COLUMNS
    return not (type_ in ("table", "index") and name is not None
                and name.startswith(UNMODELLED_PREFIXES))


def compared_object(item: Any, name: str | None, type_: str, reflected: bool,
                    compare_to: Any) -> bool:
    """Alembic ``include_object`` hook: False for the columns (and their indexes) a
    data-model extension adds to a built-in table — sync makes those, not migrations."""
    if type_ == "column":
        return not item.info.get("extension")
    if type_ == "index" and not reflected:
        return not any(column.info.get("extension") for column in item.columns)
    return True
