"""search queue: skipped for the rows a unit of work indexes itself (PostgreSQL)

The search-queue triggers (migration ``b7c4e1a2d9f0``) fire only while the transaction-local
setting ``labapp.search_queue`` is not ``off``. The PostgreSQL search backend sets it around
the plain inserts whose documents it builds from the inserted values
(labapp/search/inserted.py) and writes before the same transaction commits: a queue row for
them would only be read back and deleted again. Every other change queues as before. SQLite
is left as it is (the in-transaction backend needs PostgreSQL).

Revision ID: f2a6c8e4b1d7
Revises: a6c2e8f4b1d7
Create Date: 2026-11-29

"""
from alembic import op

# revision identifiers, used by Alembic.
revision = 'f2a6c8e4b1d7'
down_revision = 'a6c2e8f4b1d7'
branch_labels = None
depends_on = None

ATTACHMENTS = ("note", "file")
QUEUEING = "current_setting('labapp.search_queue', true) IS DISTINCT FROM 'off'"


def _triggers(when: str) -> list[str]:
    statements = [
        "DROP TRIGGER search_queue_entity ON entity",
        "CREATE TRIGGER search_queue_entity AFTER INSERT OR UPDATE OR DELETE ON entity "
        f"FOR EACH ROW {when}EXECUTE FUNCTION search_queue_entity()",
    ]
    for table in ATTACHMENTS:
        statements += [
            f"DROP TRIGGER search_queue_{table} ON {table}",
            f"CREATE TRIGGER search_queue_{table} AFTER INSERT OR UPDATE ON {table} "
            f"FOR EACH ROW {when}EXECUTE FUNCTION search_queue_attachment()",
        ]
    return statements


def upgrade():
    if op.get_bind().dialect.name != "postgresql":
        return
    for statement in _triggers(f"WHEN ({QUEUEING}) "):
        op.execute(statement)


def downgrade():
    if op.get_bind().dialect.name != "postgresql":
        return
    for statement in _triggers(""):
        op.execute(statement)
