"""suggestion indexes

What ``/api/query/suggest`` needs to answer in milliseconds at 100,000 entities
(labapp/query/entity_suggest.py and suggest.py explain how each is used):

- b-tree indexes on ``(eclass, lower(col), id)`` for ``id``, ``name`` and ``barcode``: exact
  and prefix matches, and contains matches read in index order. On PostgreSQL ``lower``
  takes the column ``COLLATE "C"`` (byte order, ASCII-only case folding), exactly the
  expression the queries compare; SQLite's ``lower`` folds ASCII only already.
- ``entity_search_text``: one narrow row per entity, ``folded`` = the three values folded
  that way and joined by U+001F, kept by triggers on ``entity``. Contains matches look for
  candidates there: a scan of narrow rows without any ``lower()`` for one or two characters,
  a trigram index from three: a ``pg_trgm`` GIN index on PostgreSQL (a trusted extension
  shipped with PostgreSQL; where it cannot be created the migration warns and goes on
  without it, the suggestions stay correct, only slower; downgrading leaves the extension),
  and on SQLite the FTS5 ``trigram`` table ``entity_search``, whose rowid is the table's
  ``key`` (entity ids are text, and the implicit rowid of ``entity`` may change on VACUUM).
- The models' own indexes for the walk over a field's distinct values: ``(eclass, status, id)``
  (replacing ``status`` alone), ``(eclass, type, id)`` and ``(unit, id)`` for the unit columns.

Expression indexes, the search table, its triggers and the trigram structures are left out of
the models (SQLAlchemy cannot reflect expression indexes on SQLite); labapp/schema.py keeps
them out of the schema comparison.

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


def _search_text(row: str, dialect: str) -> str:
    """SQL of the folded search text of ``row`` (``new``, ``n``...): id, name, barcode."""
    separator = "chr(31)" if dialect == "postgresql" else "char(31)"
    parts = (_folded(f"{row}.id", dialect), _folded(f"{row}.name", dialect),
             _folded(f"coalesce({row}.barcode, '')", dialect))
    return f" || {separator} || ".join(parts)


def _sqlite_search() -> tuple[str, ...]:
    text = _search_text("new", "sqlite")
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


def _postgresql_search() -> tuple[str, ...]:
    """Statement-level triggers: one INSERT ... SELECT per multi-row INSERT of entities."""
    text = _search_text("n", "postgresql")
    return (
        "CREATE TABLE entity_search_text (entity_id VARCHAR(64) PRIMARY KEY "
        "REFERENCES entity (id) ON DELETE CASCADE ON UPDATE CASCADE, "
        "eclass VARCHAR(32) NOT NULL, folded TEXT NOT NULL)",
        f"INSERT INTO entity_search_text SELECT n.id, n.eclass, {text} FROM entity AS n",
        f"""CREATE FUNCTION entity_search_text_insert() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO entity_search_text SELECT n.id, n.eclass, {text} FROM new_rows AS n;
            RETURN NULL;
        END $$""",
        f"""CREATE FUNCTION entity_search_text_update() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            UPDATE entity_search_text AS t SET eclass = n.eclass, folded = {text}
                FROM new_rows AS n WHERE t.entity_id = n.id
                AND (t.eclass, t.folded) IS DISTINCT FROM (n.eclass, {text});
            RETURN NULL;
        END $$""",
        "CREATE TRIGGER entity_search_text_insert AFTER INSERT ON entity "
        "REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT "
        "EXECUTE FUNCTION entity_search_text_insert()",
        "CREATE TRIGGER entity_search_text_update AFTER UPDATE ON entity "
        "REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT "
        "EXECUTE FUNCTION entity_search_text_update()",
    )


def _create_trigram_index() -> None:
    bind = op.get_bind()
    try:
        with bind.begin_nested():
            bind.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    except DBAPIError as error:
        logger.warning("pg_trgm is not available (%s): contains-suggestions of three or more "
                       "characters will scan instead of using an index.", error.orig)
        return
    op.execute("CREATE INDEX ix_entity_search_text_trigram ON entity_search_text "
               "USING gin (folded gin_trgm_ops)")


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
        for statement in _postgresql_search():
            op.execute(statement)
        _create_trigram_index()
        op.execute("ANALYZE entity")
        op.execute("ANALYZE entity_search_text")
    else:
        for statement in _sqlite_search():
            op.execute(statement)


def downgrade():
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        for trigger in ("insert", "update"):
            op.execute(f"DROP TRIGGER entity_search_text_{trigger} ON entity")
            op.execute(f"DROP FUNCTION entity_search_text_{trigger}()")
        op.execute("DROP TABLE entity_search_text")
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
