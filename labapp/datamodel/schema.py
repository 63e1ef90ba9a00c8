"""The database schema the model expects, and the one the connected database really has.

Both sides are described the same way, as plain data: tables (columns with a type, nullable),
indexes (name, table, columns) and views (name, columns), so the diff is a comparison of two
dictionaries. The expected side is the models' tables (extension classes and fields of the
registry's current model included), the structures migrations create with raw SQL (the
expression indexes of the suggestions, SQLite's search tables) and the views of
:mod:`labapp.query.dbviews`. The actual side is reflected with SQLAlchemy's inspector, the same
way on SQLite and PostgreSQL; SQLite's expression indexes, which it cannot reflect, are read
from its catalogue.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Column, Connection, Index, Table, inspect

from labapp.db import db, table_of
from labapp.model.extensions import EXTENSION_METADATA
from labapp.model.registry import classes
from labapp.query.dbviews import views

# Expression indexes of the suggestions (migration 3ac19168d4c7): the SQL that makes each.
SEARCHED = ("id", "name", "barcode")
# Tables and columns migrations make that no model describes (search structures).
SEARCH_TABLE_PREFIX = "entity_search"
SEARCH_COLUMN = ("entity", "search_text")
# The PostgreSQL search backend's documents (labapp.search.postgresql, migration 9d4b6e2f8a13).
SEARCH_DOCUMENT_TABLE = "search_document"
_TYPE_ALIASES = {"DOUBLE PRECISION": "FLOAT", "DOUBLE": "FLOAT", "REAL": "FLOAT",
                 "INT": "INTEGER", "BIGINT": "BIGINT", "TIMESTAMP WITHOUT TIME ZONE":
                 "TIMESTAMP", "DATETIME": "TIMESTAMP", "CHARACTER VARYING": "VARCHAR"}


def folded(column: str, dialect: str) -> str:
    """The folded (lower-cased) column the suggestion indexes and queries compare."""
    return f'lower({column} COLLATE "C")' if dialect == "postgresql" else f"lower({column})"


def raw_indexes(dialect: str) -> dict[str, dict[str, Any]]:
    """The expression indexes a migration made, with the SQL that makes each again."""
    return {f"ix_entity_search_{name}": {
        "table": "entity", "columns": ["eclass", folded(name, dialect), "id"],
        "sql": (f"CREATE INDEX ix_entity_search_{name} ON entity "
                f"(eclass, {folded(name, dialect)}, id)")} for name in SEARCHED}


def type_name(column_type: Any, dialect: Any) -> str:
    """A column type as comparable text: compiled for ``dialect``, synonyms folded."""
    try:
        text = column_type.compile(dialect=dialect).upper()
    except Exception:  # a reflected type the dialect cannot compile: its class name
        text = type(column_type).__name__.upper()
    base, _, rest = text.partition("(")
    base = str(_TYPE_ALIASES.get(base.strip(), base.strip()))
    if base in {"FLOAT", "INTEGER", "BIGINT", "TEXT", "BOOLEAN", "DATE", "JSON", "JSONB"}:
        return base
    return f"{base}({rest}" if rest else base


@dataclass(frozen=True)
class SchemaModel:
    """Tables (name → column name → {type, nullable}), indexes (name → {table, columns}) and
    views (database name → column names)."""

    tables: dict[str, dict[str, dict[str, Any]]]
    indexes: dict[str, dict[str, Any]]
    views: dict[str, list[str]]

    def as_json(self) -> dict[str, Any]:
        return {"tables": [{"name": name, "columns": [{"name": column, **facts}
                                                       for column, facts in columns.items()]}
                           for name, columns in sorted(self.tables.items())],
                "indexes": [{"name": name, **facts}
                            for name, facts in sorted(self.indexes.items())],
                "views": [{"name": name, "columns": columns}
                          for name, columns in sorted(self.views.items())]}


def expected_tables() -> list[Table]:
    """Every table the current model needs: the models' tables and the extension classes'."""
    tables = [table for name, table in db.metadata.tables.items()]
    current = {spec.name for spec in classes()}
    tables += [table for table in EXTENSION_METADATA.tables.values()
               if table.info.get("extension") in current]
    return tables


def _installed_extension_columns() -> set[tuple[str, str]]:
    return {(table_of(spec.model).name, field.attr) for spec in classes()
            for field in spec.fields.values() if field.attr and not field.common}


def expected_columns(table: Table) -> list[Column[Any]]:
    """The columns of ``table`` the current model has (an extension field a later model
    dropped stays mapped in this process, but is no longer expected)."""
    installed = _installed_extension_columns()
    return [column for column in table.columns
            if not column.info.get("extension") or (table.name, column.key) in installed]


def expected(dialect: Any) -> SchemaModel:
    """What the code and the extensions expect of a database of ``dialect``."""
    tables: dict[str, dict[str, dict[str, Any]]] = {}
    indexes: dict[str, dict[str, Any]] = {}
    for table in expected_tables():
        tables[table.name] = {column.name: {"type": type_name(column.type, dialect),
                                            "nullable": bool(column.nullable)}
                              for column in expected_columns(table)}
        for index in table.indexes:
            if index.name is None:  # the naming convention names every index
                continue
            if all(column.name in tables[table.name] for column in index.columns):
                indexes[index.name] = {"table": table.name,
                                       "columns": [column.name for column in index.columns]}
    for name, facts in raw_indexes(dialect.name).items():
        indexes[name] = {"table": facts["table"], "columns": facts["columns"]}
    view_columns = {spec.db_name(dialect.name): [column.column for column in spec.columns]
                    for spec in views().values()}
    return SchemaModel(tables, indexes, view_columns)


def is_search_structure(table: str, column: str | None = None) -> bool:
    """Whether a table (or column) is one of the search structures migrations make with
    raw SQL (SQLite's ``entity_search*`` tables, PostgreSQL's ``entity.search_text`` and
    the search backend's ``search_document``)."""
    if column is not None:
        return (table, column) == SEARCH_COLUMN or table == SEARCH_DOCUMENT_TABLE
    return table.startswith(SEARCH_TABLE_PREFIX) or table == SEARCH_DOCUMENT_TABLE


def actual(connection: Connection) -> SchemaModel:
    """What the database behind ``connection`` has, reflected."""
    inspector = inspect(connection)
    dialect = connection.dialect
    tables: dict[str, dict[str, dict[str, Any]]] = {}
    indexes: dict[str, dict[str, Any]] = {}
    for name in inspector.get_table_names():
        if name == "alembic_version":
            continue
        tables[name] = {column["name"]: {"type": type_name(column["type"], dialect),
                                         "nullable": bool(column["nullable"])}
                        for column in inspector.get_columns(name)}
        with warnings.catch_warnings():
            # SQLite cannot reflect expression indexes: they are read from its catalogue.
            warnings.filterwarnings("ignore", "Skipped unsupported reflection")
            found = inspector.get_indexes(name)
        for index in found:
            if index.get("duplicates_constraint"):
                continue
            columns = [column or expression for column, expression in zip(
                index["column_names"], index.get("expressions") or index["column_names"],
                strict=False)]
            if index["name"] is not None:  # an index the database made for a constraint
                indexes[index["name"]] = {"table": name, "columns": columns}
    if dialect.name == "sqlite":
        rows = connection.exec_driver_sql(
            "SELECT name, tbl_name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
        for index_name, table_name in rows:
            indexes.setdefault(index_name, {"table": table_name, "columns": ["<expression>"]})
    view_columns = {name: [column["name"] for column in inspector.get_columns(name)]
                    for name in inspector.get_view_names()}
    return SchemaModel(tables, indexes, view_columns)


def index_of(name: str) -> Index | None:
    """The model's index called ``name``, or None."""
    for table in expected_tables():
        for index in table.indexes:
            if index.name == name:
                return index
    return None
