"""The data model a lab owns: describe it, compare it with the database, synchronise them.

:func:`describe` is the expected model as ``GET /api/datamodel`` shows it; :func:`actual` and
:func:`diff` reflect the connected database; :func:`sync` brings the database in line
(decisions §12, §14). The pending schema migrations are applied by the caller before
:func:`sync` (Alembic runs its own transaction); everything else happens in the caller's
``transaction()``. Sync never drops or rewrites data: it only creates what is missing and
recreates views.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Column, Connection, select
from sqlalchemy.schema import CreateIndex

from labapp.access.actor import BUILT_IN_ROLES
from labapp.datamodel import schema
from labapp.datamodel.diff import compare, is_empty
from labapp.datamodel.viewsql import view_sql
from labapp.db import db
from labapp.model import ModelState, Role, Sequence
from labapp.model.registry import PARENT_LINKS, ClassSpec, classes, find_class, is_built_in
from labapp.model.types import utc_now
from labapp.query.dbviews import views
from labapp.sequences.service import ensure_default_sequences
from labapp.users.service import ensure_roles

Progress = Callable[[str], None]
STEPS = ("tables", "columns", "indexes", "views", "sequences", "roles", "state")


def describe() -> dict[str, Any]:
    """Every class of the current model with its fields, workflow, prefix and parent links,
    and every database view with its columns."""
    return {"classes": [_class(spec) for spec in classes()],
            "views": [{"name": view.name, "description": view.description,
                       "columns": [{"name": c.name, "type": c.type} for c in view.columns]}
                      for view in views().values()]}


def _class(spec: ClassSpec) -> dict[str, Any]:
    workflow = spec.workflow
    return {"name": spec.name, "idPrefix": spec.prefix, "table": spec.table,
            "builtIn": is_built_in(spec.name),
            "statuses": list(workflow.statuses), "initialStatus": workflow.initial,
            "transitions": None if workflow.transitions is None else {
                status: list(moves) for status, moves in workflow.transitions.items()},
            "parentLinks": list(PARENT_LINKS.get(spec.name, ())),
            "fields": [{**field.describe(), "apiName": field.name, "column": field.attr}
                       for field in spec.fields.values()]}


def actual() -> dict[str, Any]:
    """The connected database's tables, columns, indexes and views, reflected."""
    return schema.actual(db.session.connection()).as_json()


def diff() -> dict[str, Any]:
    """The expected schema against the actual one; every list empty when they agree.

    Also lists the default sequences and built-in roles that are missing (sync makes them).
    """
    connection = db.session.connection()
    found = compare(schema.expected(connection.dialect), schema.actual(connection))
    found["missingSequences"] = _missing_sequences()
    found["missingRoles"] = _missing_roles()
    return {"empty": is_empty(found), **found}


def _missing_sequences() -> list[str]:
    existing = set(db.session.scalars(select(Sequence.id)))
    return sorted(spec.name for spec in classes() if spec.prefix and spec.name not in existing)


def _missing_roles() -> list[str]:
    existing = set(db.session.scalars(select(Role.name)))
    return sorted(name for name in BUILT_IN_ROLES if name not in existing)


def sync(migrations_dir: str, digest: str, *, progress: Progress | None = None,
         migrations: list[str] | None = None) -> dict[str, Any]:
    """Create what the database lacks (tables, columns, indexes, views, default sequences,
    roles) and record the model's ``digest``; answers what was done. Flushes, never commits.

    ``migrations``: the revisions the caller applied before (reported as they are).
    """
    step = progress or (lambda _name: None)
    connection = db.session.connection()
    dialect = connection.dialect
    found = compare(schema.expected(dialect), schema.actual(connection))
    report: dict[str, Any] = {"migrations": list(migrations or [])}
    step("tables")
    report["tables"] = _create_tables(connection, set(found["missingTables"]))
    if report["tables"]:
        found = compare(schema.expected(dialect), schema.actual(connection))
    step("columns")
    report["columns"] = _add_columns(connection, found["missingColumns"])
    step("indexes")
    report["indexes"] = _create_indexes(connection, found["missingIndexes"], dialect.name)
    step("views")
    report["views"] = _recreate_views(connection, migrations_dir, found, dialect.name)
    step("sequences")
    report["sequences"] = ensure_default_sequences()
    step("roles")
    report["roles"] = ensure_roles()
    step("state")
    report["modelChanged"] = _record_state(digest)
    report["changed"] = bool(report["modelChanged"] or any(
        report[key] for key in ("migrations", "tables", "columns", "indexes", "views",
                                "sequences", "roles")))
    db.session.flush()
    return report


def _create_tables(connection: Connection, missing: set[str]) -> list[str]:
    created = []
    for table in schema.expected_tables():
        if table.name in missing:
            table.create(connection)
            created.append(table.name)
    return created


def _add_columns(connection: Connection, missing: list[dict[str, Any]]) -> list[str]:
    """Add each missing column as a nullable column (no constraint: existing rows keep
    working; the reference is checked by the entity service as for every ref field)."""
    from alembic.operations import Operations
    from alembic.runtime.migration import MigrationContext

    operations = Operations(MigrationContext.configure(connection))
    tables = {table.name: table for table in schema.expected_tables()}
    added = []
    for item in missing:
        column = tables[item["table"]].c[item["column"]]
        operations.add_column(item["table"], Column(column.name, column.type, nullable=True))
        added.append(f"{item['table']}.{item['column']}")
    return added


def _create_indexes(connection: Connection, missing: list[dict[str, Any]],
                    dialect: str) -> list[str]:
    raw = schema.raw_indexes(dialect)
    created = []
    for item in missing:
        index = schema.index_of(item["name"])
        if index is not None:
            connection.execute(CreateIndex(index))
        elif item["name"] in raw:
            connection.exec_driver_sql(raw[item["name"]]["sql"])
        else:
            continue
        created.append(item["name"])
    return created


def _recreate_views(connection: Connection, migrations_dir: str, found: dict[str, Any],
                    dialect: str) -> list[str]:
    """Create the missing views and recreate those whose columns differ."""
    changed = {item["name"] for item in found["changedViews"]}
    wanted = set(found["missingViews"]) | changed
    done = []
    for view in views().values():
        name = view.db_name(dialect)
        if name not in wanted:
            continue
        if name in changed:
            connection.exec_driver_sql(f'DROP VIEW "{name}"')
        connection.exec_driver_sql(
            f'CREATE VIEW "{name}" AS {view_sql(view, find_class(view.name), migrations_dir)}')
        done.append(view.name)
    return sorted(done)


def _record_state(digest: str) -> bool:
    """Store the synchronised model's digest; True (and a new generation) when it moved."""
    state = db.session.get(ModelState, 1)
    if state is None:
        state = ModelState(id=1, generation=0, digest="")
        db.session.add(state)
    if state.digest == digest and state.generation:
        return False
    state.digest = digest
    state.generation = (state.generation or 0) + 1
    state.synced_utc = utc_now()
    return True


def model_generation() -> tuple[int, str] | None:
    """The generation and digest the database was last synchronised to (None: never)."""
    row = db.session.execute(select(ModelState.generation, ModelState.digest)
                             .where(ModelState.id == 1)).first()
    return None if row is None else (row[0], row[1])

