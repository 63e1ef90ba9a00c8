"""runs of the directory sync (issue 35 §3)

``directory_sync``: one row per run of ``flask users sync`` or the worker's schedule, dry runs
included: when, its counts, the list of its changes, and the error that stopped it.

Revision ID: e3d1f7a9c5b2
Revises: c4e8a2f6b9d1
Create Date: 2026-11-29

"""
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from labapp.model.types import UtcDateTime

# revision identifiers, used by Alembic.
revision = 'e3d1f7a9c5b2'
down_revision = 'c4e8a2f6b9d1'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "directory_sync",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("started_utc", UtcDateTime(), nullable=False),
        sa.Column("finished_utc", UtcDateTime(), nullable=False),
        sa.Column("dry_run", sa.Boolean(), nullable=False),
        sa.Column("created", sa.Integer(), nullable=False),
        sa.Column("updated", sa.Integer(), nullable=False),
        sa.Column("deactivated", sa.Integer(), nullable=False),
        sa.Column("skipped", sa.Integer(), nullable=False),
        sa.Column("unchanged", sa.Integer(), nullable=False),
        sa.Column("changes", sa.JSON().with_variant(postgresql.JSONB(), "postgresql"),
                  nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
    )
    op.create_index("ix_directory_sync_started_utc", "directory_sync", ["started_utc"])


def downgrade() -> None:
    op.drop_index("ix_directory_sync_started_utc", table_name="directory_sync")
    op.drop_table("directory_sync")
