"""suggestion indexes

What ``/api/query/suggest`` needs to answer in milliseconds at 100,000 entities
(labapp/query/entity_suggest.py and suggest.py explain how each is used):

- b-tree indexes on ``(eclass, lower(col), id)`` for ``id``, ``name`` and ``barcode``: exact
  and prefix matches, and contains matches read in index order. On PostgreSQL ``lower``
  takes the column ``COLLATE "C"`` (byte order, ASCII-only case folding), exactly the
  expression the queries compare; SQLite's ``lower`` folds ASCII only already.
- The search text: id, name and barcode folded that way and joined by U+001F. Contains
  matches look for candidates there: by a trigram index from three characters, by a scan
  without any ``lower()`` below. On PostgreSQL it is ``entity.search_text``, a stored
  generated column, with a ``pg_trgm`` GIN index (a trusted extension shipped with
  PostgreSQL; where it cannot be created the migration warns and goes on without the index:
  the suggestions stay correct, only slower; downgrading leaves the extension). On SQLite it
  is the narrow table ``entity_search_text`` kept by triggers (SQLite can only add virtual
  generated columns), and its FTS5 ``trigram`` table ``entity_search``, whose rowid is the
  table's ``key`` (entity ids are text, and the implicit rowid of ``entity`` may change on
  VACUUM).
- The models' own indexes for the walk over a field's distinct values: ``(eclass, status, id)``
  (replacing ``status`` alone), ``(eclass, type, id)`` and ``(unit, id)`` for the unit columns.

Expression indexes and the search structures are left out of the models (SQLAlchemy cannot
reflect expression indexes on SQLite, nor add virtual tables); labapp/schema.py keeps them out
of the schema comparison.

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


def _folded(column: str, dialect: str) -> str:
    return f'lower({column} COLLATE "C")' if dialect == "postgresql" else f"lower({column})"


def _search_text(dialect: str, row: str = "") -> str:
    """SQL of the folded search text, id, name and barcode joined by U+001F, of the columns
    of ``row`` (``new`` in a trigger) or of the table itself."""
    separator = "chr(31)" if dialect == "postgresql" else "char(31)"
    prefix = f"{row}." if row else ""
    parts = (_folded(f"{prefix}id", dialect), _folded(f"{prefix}name", dialect),
             _folded(f"coalesce({prefix}barcode, '')", dialect))
    return f" || {separator} || ".join(parts)


def _sqlite_search() -> tuple[str, ...]:
    text = _search_text("sqlite", "new")
    key = "(SELECT key FROM entity_search_text WHERE entity_id = {}.id)"
    return (
        "CREATE TABLE entity_search_text (key INTEGER PRIMARY KEY, "
        "entity_id VARCHAR(64) NOT NULL UNIQUE, eclass VARCHAR(32) NOT NULL, "
        "folded TEXT NOT NULL)",
        "CREATE VIRTUAL TABLE entity_search USING fts5(folded, "
        "tokenize='trigram case_sensitive 1')",
        "INSERT INTO entity_search_text (entity_id, eclass, folded) "
        f"SELECT new.id, new.eclass, {text} FROM entity AS new ORDER BY new.id",
        "INSERT INTO entity_search (rowid, folded) SELECT key, folded FROM entity_search_text",
        f"""CREATE TRIGGER entity_search_insert AFTER INSERT ON entity BEGIN
            INSERT INTO entity_search_text (entity_id, eclass, folded)
                VALUES (new.id, new.eclass, {text});
            INSERT INTO entity_search (rowid, folded) VALUES ({key.format("new")}, {text});
        END""",
        f"""CREATE TRIGGER entity_search_update AFTER UPDATE OF id, eclass, name, barcode
            ON entity BEGIN
            UPDATE entity_search_text SET entity_id = new.id, eclass = new.eclass,
                folded = {text} WHERE entity_id = old.id;
            UPDATE entity_search SET folded = {text} WHERE rowid = {key.format("new")};
        END""",
        f"""CREATE TRIGGER entity_search_delete AFTER DELETE ON entity BEGIN
            DELETE FROM entity_search WHERE rowid = {key.format("old")};
            DELETE FROM entity_search_text WHERE entity_id = old.id;
        END""",
    )


def _postgresql_search() -> str:
    """A stored generated column: PostgreSQL keeps it without triggers (trigger functions
    would cache plans made while the tables were small)."""
    return (f"ALTER TABLE entity ADD COLUMN search_text TEXT GENERATED ALWAYS AS "
            f"({_search_text('postgresql')}) STORED")


def _create_trigram_index() -> None:
    bind = op.get_bind()
    try:
        with bind.begin_nested():
            bind.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    except DBAPIError as error:
        logger.warning("pg_trgm is not available (%s): contains-suggestions of three or more "
                       "characters will scan instead of using an index.", error.orig)
        return
    op.execute("CREATE INDEX ix_entity_search_text ON entity USING gin "
               "(search_text gin_trgm_ops)")


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
        op.execute(_postgresql_search())
        _create_trigram_index()
    else:
        for statement in _sqlite_search():
            op.execute(statement)


def downgrade():
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        op.execute("DROP INDEX IF EXISTS ix_entity_search_text")
        op.execute("ALTER TABLE entity DROP COLUMN search_text")
    else:
        for trigger in ("insert", "update", "delete"):
            op.execute(f"DROP TRIGGER entity_search_{trigger}")
        op.execute("DROP TABLE entity_search")
        op.execute("DROP TABLE entity_search_text")
    for column in SEARCHED:
        op.execute(f"DROP INDEX ix_entity_search_{column}")
    op.drop_index('ix_step_input_unit', table_name='step_input')
    op.drop_index('ix_sample_concentration_unit', table_name='sample')
    op.drop_index('ix_sample_unit', table_name='sample')
    op.drop_index('ix_entity_eclass_type', table_name='entity')
    op.drop_index('ix_entity_eclass_status', table_name='entity')
    op.create_index('ix_entity_status', 'entity', ['status'])
