"""search queue

The durable queue of the search index (labapp/search/indexer.py): table ``search_queue`` and
triggers that add a row in the transaction of every change, so the index can never miss a
committed change — whether the change came through the ORM or through Core inserts of the
entity batch.

- ``entity``: every insert, update and delete queues the entity's id.
- ``note`` and ``file``: an insert or update queues the note or file itself (its content
  or name may change without touching ``entity``) and the subject it is attached to, whose
  document holds the note text and file names; a moved attachment queues its old subject too.

Grants need no rows: documents carry department, project and class labels, and a grant only
changes which labels a caller holds (labapp/access/labels.py).

Revision ID: b7c4e1a2d9f0
Revises: 3ac19168d4c7
Create Date: 2026-11-23

"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = 'b7c4e1a2d9f0'
down_revision = '7d2b9c4e1a05'
branch_labels = None
depends_on = None

ATTACHMENTS = ("note", "file")


def _sqlite_triggers() -> list[str]:
    queue = "INSERT INTO search_queue (entity_id) VALUES"
    statements = [
        f"CREATE TRIGGER search_queue_entity_insert AFTER INSERT ON entity BEGIN "
        f"{queue} (new.id); END",
        f"CREATE TRIGGER search_queue_entity_update AFTER UPDATE ON entity BEGIN "
        f"{queue} (new.id); END",
        f"CREATE TRIGGER search_queue_entity_delete AFTER DELETE ON entity BEGIN "
        f"{queue} (old.id); END",
    ]
    for table in ATTACHMENTS:
        statements += [
            f"CREATE TRIGGER search_queue_{table}_insert AFTER INSERT ON {table} BEGIN "
            f"{queue} (new.id); "
            f"INSERT INTO search_queue (entity_id) SELECT new.subject_id "
            f"WHERE new.subject_id IS NOT NULL; END",
            f"CREATE TRIGGER search_queue_{table}_update AFTER UPDATE ON {table} BEGIN "
            f"{queue} (new.id); "
            f"INSERT INTO search_queue (entity_id) SELECT new.subject_id "
            f"WHERE new.subject_id IS NOT NULL; "
            f"INSERT INTO search_queue (entity_id) SELECT old.subject_id "
            f"WHERE old.subject_id IS NOT NULL AND old.subject_id IS NOT new.subject_id; END",
        ]
    return statements


_PG_ENTITY = """
CREATE FUNCTION search_queue_entity() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO search_queue (entity_id) VALUES (OLD.id);
        RETURN OLD;
    END IF;
    INSERT INTO search_queue (entity_id) VALUES (NEW.id);
    RETURN NEW;
END $$"""

_PG_ATTACHMENT = """
CREATE FUNCTION search_queue_attachment() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO search_queue (entity_id) VALUES (NEW.id);
    IF NEW.subject_id IS NOT NULL THEN
        INSERT INTO search_queue (entity_id) VALUES (NEW.subject_id);
    END IF;
    IF TG_OP = 'UPDATE' AND OLD.subject_id IS NOT NULL
            AND OLD.subject_id IS DISTINCT FROM NEW.subject_id THEN
        INSERT INTO search_queue (entity_id) VALUES (OLD.subject_id);
    END IF;
    RETURN NEW;
END $$"""


def _postgresql_triggers() -> list[str]:
    statements = [
        _PG_ENTITY, _PG_ATTACHMENT,
        "CREATE TRIGGER search_queue_entity AFTER INSERT OR UPDATE OR DELETE ON entity "
        "FOR EACH ROW EXECUTE FUNCTION search_queue_entity()",
    ]
    for table in ATTACHMENTS:
        statements.append(
            f"CREATE TRIGGER search_queue_{table} AFTER INSERT OR UPDATE ON {table} "
            f"FOR EACH ROW EXECUTE FUNCTION search_queue_attachment()")
    return statements


def upgrade():
    op.create_table(
        'search_queue',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('entity_id', sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_search_queue')),
        sqlite_autoincrement=True,
    )
    dialect = op.get_bind().dialect.name
    for statement in (_postgresql_triggers() if dialect == "postgresql"
                      else _sqlite_triggers()):
        op.execute(statement)


def downgrade():
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER search_queue_entity ON entity")
        for table in ATTACHMENTS:
            op.execute(f"DROP TRIGGER search_queue_{table} ON {table}")
        op.execute("DROP FUNCTION search_queue_entity()")
        op.execute("DROP FUNCTION search_queue_attachment()")
    else:
        for name in ("entity_insert", "entity_update", "entity_delete", "note_insert",
                     "note_update", "file_insert", "file_update"):
            op.execute(f"DROP TRIGGER search_queue_{name}")
    op.drop_table('search_queue')
