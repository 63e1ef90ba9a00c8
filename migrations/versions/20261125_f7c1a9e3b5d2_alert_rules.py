"""alert rules (issue 23)

``alert_rule`` holds the rules; ``alert_state`` the items each rule matches now (its primary
key is the unique (rule, item) that makes an alert go out once); ``mail_outbox`` the e-mails
waiting to be sent, with their attempts and last error.

Revision ID: f7c1a9e3b5d2
Revises: e4b8c2d6f0a3
Create Date: 2026-11-25

"""
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision = 'f7c1a9e3b5d2'
down_revision = 'e4b8c2d6f0a3'
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')


def upgrade():
    op.create_table('alert_rule',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('eclass', sa.String(length=32), nullable=False),
    sa.Column('filter', sa.Text(), nullable=True),
    sa.Column('recipients', JSON, nullable=False),
    sa.Column('channels', JSON, nullable=False),
    sa.Column('cadence', sa.String(length=16), nullable=False),
    sa.Column('active', sa.Boolean(), nullable=False),
    sa.Column('owner_id', sa.String(length=64), nullable=False),
    sa.Column('digest_due_utc', sa.DateTime(), nullable=True),
    sa.Column('created_utc', sa.DateTime(), nullable=False),
    sa.Column('modified_utc', sa.DateTime(), nullable=False),
    sa.CheckConstraint("cadence IN ('immediate', 'daily', 'weekly')", name=op.f('ck_alert_rule_cadence')),
    sa.ForeignKeyConstraint(['owner_id'], ['app_user.id'], name=op.f('fk_alert_rule_owner_id_app_user'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_alert_rule'))
    )
    with op.batch_alter_table('alert_rule', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_alert_rule_owner_id'), ['owner_id'], unique=False)

    op.create_table('alert_state',
    sa.Column('rule_id', sa.String(length=32), nullable=False),
    sa.Column('entity_id', sa.String(length=64), nullable=False),
    sa.Column('matching_since', sa.DateTime(), nullable=False),
    sa.Column('alerted_utc', sa.DateTime(), nullable=True),
    sa.ForeignKeyConstraint(['entity_id'], ['entity.id'], name=op.f('fk_alert_state_entity_id_entity'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['rule_id'], ['alert_rule.id'], name=op.f('fk_alert_state_rule_id_alert_rule'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('rule_id', 'entity_id', name=op.f('pk_alert_state'))
    )
    op.create_table('mail_outbox',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('recipient', sa.String(length=320), nullable=False),
    sa.Column('user_id', sa.String(length=64), nullable=True),
    sa.Column('subject', sa.String(length=255), nullable=False),
    sa.Column('body_text', sa.Text(), nullable=False),
    sa.Column('body_html', sa.Text(), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('next_attempt_utc', sa.DateTime(), nullable=False),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('sent_utc', sa.DateTime(), nullable=True),
    sa.Column('created_utc', sa.DateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_mail_outbox'))
    )
    with op.batch_alter_table('mail_outbox', schema=None) as batch_op:
        batch_op.create_index('ix_mail_outbox_due', ['sent_utc', 'next_attempt_utc'], unique=False)


def downgrade():
    with op.batch_alter_table('mail_outbox', schema=None) as batch_op:
        batch_op.drop_index('ix_mail_outbox_due')

    op.drop_table('mail_outbox')
    op.drop_table('alert_state')
    with op.batch_alter_table('alert_rule', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_alert_rule_owner_id'))

    op.drop_table('alert_rule')
