"""worker process (issue 34 §2)

``worker_process``: on PostgreSQL, one row per process that runs jobs (the worker, ``flask
import``), so any host can list the workers of every host; a row's process is alive while
it holds its advisory lock (``labapp.liveness``, ``labapp.advisory``). SQLite installations
keep their lock files and leave the table empty.

Revision ID: 3e9a5c7d2f14
Revises: a3c5e7f9b1d4
Create Date: 2026-11-28

"""
import sqlalchemy as sa
from alembic import op

import labapp.model.types

# revision identifiers, used by Alembic.
revision = '3e9a5c7d2f14'
down_revision = 'a3c5e7f9b1d4'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "worker_process",
        sa.Column("id", sa.String(length=100), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("host", sa.String(length=64), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("started_utc", labapp.model.types.UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_worker_process")),
    )


def downgrade() -> None:
    op.drop_table("worker_process")
