"""The migrations and the models describe the same schema, and the history runs both ways."""
from __future__ import annotations

import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from flask import Flask
from flask_migrate import downgrade, upgrade
from sqlalchemy import column, insert, inspect, select
from sqlalchemy import table as sa_table

from labapp import sealing
from labapp.access.actor import ADMIN, Actor
from labapp.auth import second_factor
from labapp.db import db
from labapp.model import Entity, EntityCount, EntityCountChange, Sample
from labapp.model.registry import find_class
from labapp.query.entity_suggest import suggest_entities
from labapp.schema import compared_in_schema, compared_object, schema_state
from tests.conftest import run_init


def drift() -> list:
    """What autogenerate would write for the current database (empty = no drift)."""
    with db.engine.connect() as connection, warnings.catch_warnings():
        # SQLite cannot reflect the (unmodelled) expression indexes of the suggestions.
        warnings.filterwarnings("ignore", "Skipped unsupported reflection of expression-based "
                                "index ix_entity_search_")
        context = MigrationContext.configure(connection, opts={
            "compare_type": True, "include_name": compared_in_schema,
            "include_object": compared_object})
        return compare_metadata(context, db.metadata)


BEFORE_SUGGESTION_INDEXES = "e2b2e5c79bf7"


def _entity(entity_id: str, name: str) -> dict[str, Any]:
    now = datetime.now(UTC)
    return {"id": entity_id, "eclass": "Sample", "name": name, "status": "Initial",
            "type": "Other", "attributes": {}, "created_by": "admin", "created_utc": now,
            "modified_by": "admin", "modified_utc": now, "version": 1}


def search_structures() -> set[str]:
    """Names of the tables and indexes the suggestion-indexes migration made (SQLAlchemy
    cannot reflect expression indexes on SQLite, so the catalogues are read)."""
    catalogue = ("SELECT name FROM sqlite_master" if db.engine.dialect.name == "sqlite" else
                 "SELECT indexname FROM pg_indexes UNION SELECT tablename FROM pg_tables")
    with db.engine.connect() as connection:
        names = set(connection.exec_driver_sql(catalogue).scalars())
    return {name for name in names if not compared_in_schema(name, "table", {})}


def upgrade_across(application: Flask, revision: str,
                   entities: list[dict[str, Any]], samples: tuple[str, ...] = ()) -> None:
    """Upgrade ``application``'s new database to ``revision``, insert ``entities`` (and the
    ``sample`` rows of ``samples``) as they were then, and upgrade to the head."""
    directory = application.extensions["migrate"].directory
    upgrade(directory=directory, revision=revision)
    with db.engine.begin() as connection:
        connection.execute(insert(Entity.__table__), entities)
        if samples:
            connection.execute(insert(Sample.__table__), [{"id": id_} for id_ in samples])
    upgrade(directory=directory)


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


def test_the_suggestion_indexes_cover_entities_created_before_them(
        fresh_app: Callable[[], Flask]) -> None:
    application = fresh_app()
    with application.app_context():
        upgrade_across(application, BEFORE_SUGGESTION_INDEXES,
                       [_entity("OLD-1", "Quasar nebula"), _entity("OLD-2", "Pulsar")],
                       samples=("OLD-1", "OLD-2"))

        admin = Actor(user_id="admin", roles=frozenset({ADMIN}))
        found = suggest_entities(admin, find_class("Sample"), "asar neb")
        assert [entity["id"] for entity in found] == ["OLD-1"]
        expected = {"ix_entity_search_name", "ix_entity_search_barcode"} | (
            {"entity_search_text", "entity_search"} if db.engine.dialect.name == "sqlite"
            else {"ix_entity_search_text"})
        assert expected <= search_structures()


BEFORE_ENTITY_COUNTS = "e5a7c3f1b208"


def test_the_entity_counts_start_from_the_entities_already_there(
        fresh_app: Callable[[], Flask]) -> None:
    application = fresh_app()
    with application.app_context():
        upgrade_across(application, BEFORE_ENTITY_COUNTS,
                       [_entity("OLD-1", "one"), _entity("OLD-2", "two")])
        with db.engine.begin() as connection:
            connection.execute(insert(Entity.__table__), [_entity("NEW-1", "three")])
        today = datetime.now(UTC).date()
        key = ("Sample", today, "Initial", "", "")
        with db.engine.connect() as connection:
            folded = connection.execute(select(EntityCount.__table__)).all()
            pending = connection.execute(select(EntityCountChange.n)).scalars().all()
        assert [tuple(row) for row in folded] == [(*key, 2)]
        assert pending == [1]


BEFORE_SEALED_SECOND_FACTORS = "d8b4f2a6c1e9"
FACTORS = sa_table("second_factor", column("user_id"), column("secret"),
                   column("created_utc"))


def test_second_factor_secrets_kept_in_clear_are_sealed_and_unsealed_going_back(
        fresh_app: Callable[[], Flask]) -> None:
    application = fresh_app()
    run_init(application)
    with application.app_context():
        directory = application.extensions["migrate"].directory
        downgrade(directory=directory, revision=BEFORE_SEALED_SECOND_FACTORS)
        with db.engine.begin() as connection:
            connection.execute(insert(FACTORS), [{
                "user_id": "admin", "secret": "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP",
                "created_utc": datetime.now(UTC)}])
        upgrade(directory=directory)
        with db.engine.connect() as connection:
            sealed = connection.execute(select(FACTORS.c.secret)).scalar_one()
        assert sealing.is_sealed(sealed) and "JBSWY3DPEHPK3PXP" not in sealed
        assert sealing.unseal(sealed, sealing.current_keys(), second_factor.PURPOSE) == (
            "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP")
        assert drift() == []
        downgrade(directory=directory, revision=BEFORE_SEALED_SECOND_FACTORS)
        with db.engine.connect() as connection:
            assert connection.execute(select(FACTORS.c.secret)).scalar_one() == (
                "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP")
        upgrade(directory=directory)
