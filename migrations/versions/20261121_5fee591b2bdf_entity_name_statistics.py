"""entity name statistics

PostgreSQL only: planner statistics on ``lower(entity.name)``, the expression every name filter
of the $filter dialect compares (startswith, contains, endswith, tolower(name) eq). Without
them PostgreSQL guesses that ``lower(name) LIKE 's%'`` keeps 0.5% of the rows, and plans a
100,000-row page and its count(*) as one index probe per entity row (bench/runs/2026-11-21-bulk-create-and-pages.md). An
expression index would give the same statistics, but SQLAlchemy cannot reflect expression
indexes on SQLite, so the schema comparison could not check it; extended statistics are not
part of the compared schema. SQLite keeps no such statistics: nothing to do there.

Revision ID: 5fee591b2bdf
Revises: 64731f43866b
Create Date: 2026-11-21

"""
from alembic import op

# revision identifiers, used by Alembic.
revision = '5fee591b2bdf'
down_revision = '64731f43866b'
branch_labels = None
depends_on = None

STATISTICS = "st_entity_name_lower"


def _expression_statistics_supported() -> bool:
    """PostgreSQL 14 and later keep statistics on expressions."""
    dialect = op.get_bind().dialect
    return dialect.name == "postgresql" and (dialect.server_version_info or (14,)) >= (14,)


def upgrade():
    if _expression_statistics_supported():
        op.execute(f"CREATE STATISTICS IF NOT EXISTS {STATISTICS} ON (lower(name)) FROM entity")
        op.execute("ANALYZE entity")


def downgrade():
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"DROP STATISTICS IF EXISTS {STATISTICS}")
