"""import job's worker (issue 32)

``import_job.worker``: the id of the process that claimed the job (role, host, pid and a
random part; ``labapp.liveness``), so a job whose process is gone is failed at once instead
of two hours later. Jobs claimed before have none and keep the two-hour rule.

Revision ID: 5e3d9a7c1f42
Revises: d4f2a8c61b7e
Create Date: 2026-11-28

"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = '5e3d9a7c1f42'
down_revision = 'd4f2a8c61b7e'
branch_labels = None
depends_on = None


def upgrade():
    op.add_column('import_job', sa.Column('worker', sa.String(length=160), nullable=True))


def downgrade():
    # Both databases drop a column in place (SQLite since 3.35); a batch copy of the table
    # would reflect the whole schema, whose expression indexes SQLite cannot reflect.
    op.execute("ALTER TABLE import_job DROP COLUMN worker")
