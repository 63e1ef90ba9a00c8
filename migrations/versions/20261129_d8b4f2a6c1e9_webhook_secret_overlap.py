"""webhook secret overlap: a rotated secret keeps signing beside the new one for a while

``previous_secret`` (sealed like ``secret``) and ``previous_secret_until``: until then every
delivery carries both signatures (docs/decisions/webhooks.md).

Revision ID: d8b4f2a6c1e9
Revises: f2a6c8e4b1d7
Create Date: 2026-11-29

"""
import sqlalchemy as sa
from alembic import op

from labapp.model.types import UtcDateTime

# revision identifiers, used by Alembic.
revision = 'd8b4f2a6c1e9'
down_revision = 'f2a6c8e4b1d7'
branch_labels = None
depends_on = None


def upgrade():
    op.add_column("webhook_subscription", sa.Column("previous_secret", sa.Text(), nullable=True))
    op.add_column("webhook_subscription",
                  sa.Column("previous_secret_until", UtcDateTime(), nullable=True))


def downgrade():
    # SQLite drops a column in place (3.35+), as PostgreSQL does: no table copy.
    op.drop_column("webhook_subscription", "previous_secret_until")
    op.drop_column("webhook_subscription", "previous_secret")
