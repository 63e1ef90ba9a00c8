"""webhooks (issue 36 §3)

``webhook_subscription``: a receiver of the change log with its own cursor, the message it
is delivering (sent again as it was until it succeeds), its failure state and the lease of
the worker delivering it; ``webhook_delivery``: every attempt, and pings and redeliveries
queued by hand.

Revision ID: a6c2e8f4b1d7
Revises: b7d2e9f4a1c6
Create Date: 2026-11-29

"""
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from labapp.model.types import UtcDateTime

# revision identifiers, used by Alembic.
revision = 'a6c2e8f4b1d7'
down_revision = 'b7d2e9f4a1c6'
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')


def upgrade() -> None:
    op.create_table(
        "webhook_subscription",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("events", JSON, nullable=False),
        sa.Column("filter", sa.Text(), nullable=True),
        sa.Column("secret", sa.Text(), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("owner_id", sa.String(64), nullable=False),
        sa.Column("cursor", sa.BigInteger(), nullable=False),
        sa.Column("pending_seq", sa.BigInteger(), nullable=True),
        sa.Column("pending_message_id", sa.String(64), nullable=True),
        sa.Column("pending_type", sa.String(64), nullable=True),
        sa.Column("pending_body", sa.Text(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_utc", UtcDateTime(), nullable=True),
        sa.Column("failing_since", UtcDateTime(), nullable=True),
        sa.Column("disabled_reason", sa.Text(), nullable=True),
        sa.Column("lease_token", sa.String(32), nullable=True),
        sa.Column("lease_until", UtcDateTime(), nullable=True),
        sa.Column("created_utc", UtcDateTime(), nullable=False),
        sa.Column("modified_utc", UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["owner_id"], ["app_user.id"],
                                name=op.f("fk_webhook_subscription_owner_id_app_user"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_subscription")),
    )
    op.create_index("ix_webhook_subscription_owner_id", "webhook_subscription", ["owner_id"])
    op.create_index("ix_webhook_subscription_due", "webhook_subscription",
                    ["active", "next_attempt_utc"])
    op.create_table(
        "webhook_delivery",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("subscription_id", sa.String(32), nullable=False),
        sa.Column("message_id", sa.String(64), nullable=False),
        sa.Column("event_type", sa.String(64), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=True),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("response_code", sa.Integer(), nullable=True),
        sa.Column("duration_ms", sa.Integer(), nullable=True),
        sa.Column("response_body", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("next_attempt_utc", UtcDateTime(), nullable=True),
        sa.Column("created_utc", UtcDateTime(), nullable=False),
        sa.Column("attempted_utc", UtcDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["subscription_id"], ["webhook_subscription.id"],
                                name=op.f("fk_webhook_delivery_subscription_id_webhook_subscription"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_delivery")),
    )
    op.create_index("ix_webhook_delivery_subscription", "webhook_delivery",
                    ["subscription_id", "id"])
    op.create_index("ix_webhook_delivery_queued", "webhook_delivery", ["status", "id"])


def downgrade() -> None:
    op.drop_index("ix_webhook_delivery_queued", table_name="webhook_delivery")
    op.drop_index("ix_webhook_delivery_subscription", table_name="webhook_delivery")
    op.drop_table("webhook_delivery")
    op.drop_index("ix_webhook_subscription_due", table_name="webhook_subscription")
    op.drop_index("ix_webhook_subscription_owner_id", table_name="webhook_subscription")
    op.drop_table("webhook_subscription")
