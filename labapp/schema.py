"""The database schema's state against the Alembic migrations shipped with the code."""
from __future__ import annotations

from dataclasses import dataclass

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
