"""The migrations and the models describe the same schema, and the history runs both ways."""
from __future__ import annotations

from collections.abc import Callable

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from flask import Flask
from flask_migrate import downgrade, upgrade
from sqlalchemy import inspect

from labapp.db import db
from labapp.schema import schema_state
from tests.conftest import run_init


def drift() -> list:
    """What autogenerate would write for the current database (empty = no drift)."""
    with db.engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return compare_metadata(context, db.metadata)


def tables() -> set[str]:
    return set(inspect(db.engine).get_table_names())


def test_migrations_match_the_models(fresh_app: Callable[..., Flask]) -> None:
    application = fresh_app()
    run_init(application)

    with application.app_context():
        assert drift() == []
        # The comparison can fail: a schema that lost an index is reported.
        with db.engine.begin() as connection:
            connection.exec_driver_sql("DROP INDEX ix_entity_name")
        assert [diff[0] for diff in drift()] == ["add_index"]


def test_downgrade_to_base_and_upgrade_again(fresh_app: Callable[..., Flask]) -> None:
    application = fresh_app()
    with application.app_context():
        directory = application.extensions["migrate"].directory
        upgrade(directory=directory)
        assert set(db.metadata.tables) <= tables()

        downgrade(directory=directory, revision="base")
        assert tables() <= {"alembic_version"}
        assert schema_state().current == frozenset()

        upgrade(directory=directory)
        assert schema_state().up_to_date
        assert drift() == []
