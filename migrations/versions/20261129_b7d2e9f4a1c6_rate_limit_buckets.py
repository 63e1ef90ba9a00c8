"""rate-limit buckets (issue 36 §4)

``rate_limit_bucket``: one row per token, user or client address that called the API
lately, holding its theoretical arrival time (docs/decisions/rate-limits.md). Used on
PostgreSQL; an SQLite install keeps its buckets in a small file of its own in the instance
folder, so the table stays empty there.

Revision ID: b7d2e9f4a1c6
Revises: f1a3c5e7b9d2
Create Date: 2026-11-29

"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = 'b7d2e9f4a1c6'
down_revision = 'f1a3c5e7b9d2'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rate_limit_bucket",
        sa.Column("key", sa.String(length=160), nullable=False),
        sa.Column("tat", sa.BigInteger(), nullable=False),
        sa.Column("emission", sa.BigInteger(), nullable=False),
        sa.Column("capacity", sa.BigInteger(), nullable=False),
        sa.Column("allowed", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_rate_limit_bucket"),
    )


def downgrade() -> None:
    op.drop_table("rate_limit_bucket")
