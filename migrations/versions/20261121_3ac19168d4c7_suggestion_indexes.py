"""suggestion indexes

What ``/api/query/suggest`` needs to answer in milliseconds at 100,000 entities
(labapp/query/entity_suggest.py and field_values.py explain how each is used):

- Both databases: b-tree indexes on ``(eclass, lower(col), id)`` for ``id``, ``name`` and
  ``barcode``, serving exact and prefix matches, and contains matches in index order. On
  PostgreSQL ``lower`` takes the column ``COLLATE "C"`` (byte order, ASCII-only case folding),
  exactly the expression the queries compare; SQLite's ``lower`` folds ASCII only already.
- PostgreSQL: ``pg_trgm`` GIN indexes on the same three expressions, for contains matches of
  three or more characters. ``pg_trgm`` ships with PostgreSQL (contrib) and is a trusted
  extension; where it cannot be created the migration warns and goes on without these
  indexes (the suggestions stay correct, only slower). Downgrading leaves the extension.
- SQLite: ``entity_search``, an FTS5 ``trigram`` table holding id, name and barcode of every
  entity, for the same contains matches. Its rowid is the ``key`` of ``entity_search_key``
  (entity ids are text, and the implicit rowid of ``entity`` may change on VACUUM); triggers
  on ``entity`` keep both in step with every insert, update and delete.
- The models' own indexes for the walk over a field's distinct values: ``(eclass, status, id)``
  (replacing ``status`` alone), ``(eclass, type, id)`` and ``(unit, id)`` for the unit columns.

Expression indexes, GIN indexes and FTS5 tables are left out of the models (SQLAlchemy cannot
reflect expression indexes on SQLite); labapp/schema.py keeps them out of the schema
comparison.

Revision ID: 3ac19168d4c7
Revises: e2b2e5c79bf7
Create Date: 2026-11-21

"""
import logging

from alembic import op
from sqlalchemy.exc import DBAPIError

# revision identifiers, used by Alembic.
revision = '3ac19168d4c7'
down_revision = 'e2b2e5c79bf7'
branch_labels = None
depends_on = None

logger = logging.getLogger("alembic.runtime.migration")

SEARCHED = ("id", "name", "barcode")

SQLITE_SEARCH = (
    "CREATE TABLE entity_search_key (key INTEGER PRIMARY KEY, "
    "entity_id VARCHAR(64) NOT NULL UNIQUE)",
    "CREATE VIRTUAL TABLE entity_search USING fts5(id, name, barcode, tokenize='trigram')",
    "INSERT INTO entity_search_key (entity_id) SELECT id FROM entity ORDER BY id",
    "INSERT INTO entity_search (rowid, id, name, barcode) SELECT k.key, e.id, e.name, "
    "e.barcode FROM entity_search_key k JOIN entity e ON e.id = k.entity_id",
    """CREATE TRIGGER entity_search_insert AFTER INSERT ON entity BEGIN
        INSERT INTO entity_search_key (entity_id) VALUES (new.id);
        INSERT INTO entity_search (rowid, id, name, barcode) VALUES (
            (SELECT key FROM entity_search_key WHERE entity_id = new.id),
            new.id, new.name, new.barcode);
    END""",
    """CREATE TRIGGER entity_search_update AFTER UPDATE OF id, name, barcode ON entity BEGIN
        UPDATE entity_search_key SET entity_id = new.id WHERE entity_id = old.id;
        UPDATE entity_search SET id = new.id, name = new.name, barcode = new.barcode
            WHERE rowid = (SELECT key FROM entity_search_key WHERE entity_id = new.id);
    END""",
    """CREATE TRIGGER entity_search_delete AFTER DELETE ON entity BEGIN
        DELETE FROM entity_search
            WHERE rowid = (SELECT key FROM entity_search_key WHERE entity_id = old.id);
        DELETE FROM entity_search_key WHERE entity_id = old.id;
    END""",
)


def _folded(column: str, dialect: str) -> str:
    return f'lower({column} COLLATE "C")' if dialect == "postgresql" else f"lower({column})"


def _create_trigram_indexes() -> None:
    bind = op.get_bind()
    try:
        with bind.begin_nested():
            bind.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    except DBAPIError as error:
        logger.warning("pg_trgm is not available (%s): contains-suggestions of three or more "
                       "characters will scan instead of using an index.", error.orig)
        return
    for column in SEARCHED:
        op.execute(f"CREATE INDEX ix_entity_trigram_{column} ON entity USING gin "
                   f"({_folded(column, 'postgresql')} gin_trgm_ops)")


def upgrade():
    dialect = op.get_bind().dialect.name
    op.drop_index('ix_entity_status', table_name='entity')
    op.create_index('ix_entity_eclass_status', 'entity', ['eclass', 'status', 'id'])
    op.create_index('ix_entity_eclass_type', 'entity', ['eclass', 'type', 'id'])
    op.create_index('ix_sample_unit', 'sample', ['unit', 'id'])
    op.create_index('ix_sample_concentration_unit', 'sample', ['concentration_unit', 'id'])
    op.create_index('ix_step_input_unit', 'step_input', ['unit', 'id'])
    for column in SEARCHED:
        op.execute(f"CREATE INDEX ix_entity_search_{column} ON entity "
                   f"(eclass, {_folded(column, dialect)}, id)")
    if dialect == "postgresql":
        _create_trigram_indexes()
        op.execute("ANALYZE entity")
    else:
        for statement in SQLITE_SEARCH:
            op.execute(statement)


def downgrade():
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        for column in SEARCHED:
            op.execute(f"DROP INDEX IF EXISTS ix_entity_trigram_{column}")
    else:
        for trigger in ("insert", "update", "delete"):
            op.execute(f"DROP TRIGGER entity_search_{trigger}")
        op.execute("DROP TABLE entity_search")
        op.execute("DROP TABLE entity_search_key")
    for column in SEARCHED:
        op.execute(f"DROP INDEX ix_entity_search_{column}")
    op.drop_index('ix_step_input_unit', table_name='step_input')
    op.drop_index('ix_sample_concentration_unit', table_name='sample')
    op.drop_index('ix_sample_unit', table_name='sample')
    op.drop_index('ix_entity_eclass_type', table_name='entity')
    op.drop_index('ix_entity_eclass_status', table_name='entity')
    op.create_index('ix_entity_status', 'entity', ['status'])
