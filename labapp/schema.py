"""The database schema's state against the Alembic migrations shipped with the code."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from flask import current_app

from labapp.db import db


def _script_directory() -> ScriptDirectory:
    directory = current_app.extensions["migrate"].directory
    config = Config()
    config.set_main_option("script_location", directory)
    return ScriptDirectory.from_config(config)


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
    return SchemaState(frozenset(current), frozenset(_script_directory().get_heads()))


# Search structures created by the suggestion-indexes migration and not described by the
# models: expression indexes (not reflectable on SQLite), PostgreSQL's generated column
# entity.search_text with its trigram index, SQLite's trigger-kept entity_search_text table and
# its FTS5 table (with the FTS5 shadow tables).
UNMODELLED_PREFIXES = ("ix_entity_search_", "entity_search")
UNMODELLED_COLUMNS = frozenset({("entity", "search_text")})


def compared_in_schema(name: str | None, type_: str, parent_names: dict[str, Any]) -> bool:
    """Alembic ``include_name`` hook: False for the search structures no model describes."""
    if type_ == "column":
        return (parent_names.get("table_name"), name) not in UNMODELLED_COLUMNS
    return not (type_ in ("table", "index") and name is not None
                and name.startswith(UNMODELLED_PREFIXES))
