"""mail outbox: given up, and the rules a message tells of (issue 32)

``mail_outbox.given_up_utc`` marks a message the outbox no longer tries: after its last
attempt, or at once when it cannot be composed (a header that cannot be built). Messages
already given up (every attempt used) are marked from their last attempt.
``mail_message_rule`` links a message to the alert rules it tells of, so a rule's owner sees
its failed deliveries.

Revision ID: d4f2a8c61b7e
Revises: c8e2a4f6d1b3
Create Date: 2026-11-28

"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = 'd4f2a8c61b7e'
down_revision = 'c8e2a4f6d1b3'
branch_labels = None
depends_on = None

MAX_ATTEMPTS = 8  # labapp.alerts.mail.MAX_ATTEMPTS when this was written


def upgrade():
    with op.batch_alter_table('mail_outbox', schema=None) as batch_op:
        batch_op.add_column(sa.Column('given_up_utc', sa.DateTime(), nullable=True))
    op.execute("UPDATE mail_outbox SET given_up_utc = next_attempt_utc "
               f"WHERE sent_utc IS NULL AND attempts >= {MAX_ATTEMPTS}")
    op.create_table('mail_message_rule',
    sa.Column('message_id', sa.Integer(), nullable=False),
    sa.Column('rule_id', sa.String(length=32), nullable=False),
    sa.ForeignKeyConstraint(['message_id'], ['mail_outbox.id'], name=op.f('fk_mail_message_rule_message_id_mail_outbox'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['rule_id'], ['alert_rule.id'], name=op.f('fk_mail_message_rule_rule_id_alert_rule'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('message_id', 'rule_id', name=op.f('pk_mail_message_rule'))
    )
    with op.batch_alter_table('mail_message_rule', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_mail_message_rule_rule_id'), ['rule_id'], unique=False)


def downgrade():
    with op.batch_alter_table('mail_message_rule', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_mail_message_rule_rule_id'))

    op.drop_table('mail_message_rule')
    with op.batch_alter_table('mail_outbox', schema=None) as batch_op:
        batch_op.drop_column('given_up_utc')
