"""second factor (TOTP) for local accounts, its recovery codes, and sign-in events (issue 35)

``second_factor``: one row per local account that enrolled (the TOTP secret, when enrolment
was confirmed, the time step of the last accepted code). ``recovery_code``: SHA-256 hashes of
the one-time recovery codes. ``sign_in_event``: every sign-in attempt, successful or not.
New tables only: ``app_user`` keeps its triggers untouched.

Revision ID: c4e8a2f6b9d1
Revises: 5a7c9e1b3d2f
Create Date: 2026-11-29

"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = 'c4e8a2f6b9d1'
down_revision = '5a7c9e1b3d2f'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'second_factor',
        sa.Column('user_id', sa.String(length=64), nullable=False),
        sa.Column('secret', sa.String(length=64), nullable=False),
        sa.Column('created_utc', sa.DateTime(), nullable=False),
        sa.Column('confirmed_utc', sa.DateTime(), nullable=True),
        sa.Column('last_step', sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(['user_id'], ['app_user.id'],
                                name=op.f('fk_second_factor_user_id_app_user'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('user_id', name=op.f('pk_second_factor')))
    op.create_table(
        'recovery_code',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('user_id', sa.String(length=64), nullable=False),
        sa.Column('code_hash', sa.String(length=64), nullable=False),
        sa.Column('used_utc', sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(['user_id'], ['second_factor.user_id'],
                                name=op.f('fk_recovery_code_user_id_second_factor'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_recovery_code')))
    op.create_index(op.f('ix_recovery_code_user_id'), 'recovery_code', ['user_id'])
    op.create_table(
        'sign_in_event',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('at_utc', sa.DateTime(), nullable=False),
        sa.Column('username', sa.String(length=255), nullable=False),
        sa.Column('user_id', sa.String(length=64), nullable=True),
        sa.Column('method', sa.String(length=40), nullable=False),
        sa.Column('provider', sa.String(length=80), nullable=True),
        sa.Column('address', sa.String(length=64), nullable=False),
        sa.Column('succeeded', sa.Boolean(), nullable=False),
        sa.Column('reason', sa.String(length=80), nullable=True),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_sign_in_event')))
    op.create_index(op.f('ix_sign_in_event_at_utc'), 'sign_in_event', ['at_utc'])
    op.create_index(op.f('ix_sign_in_event_user_id'), 'sign_in_event', ['user_id'])


def downgrade() -> None:
    op.drop_index(op.f('ix_sign_in_event_user_id'), table_name='sign_in_event')
    op.drop_index(op.f('ix_sign_in_event_at_utc'), table_name='sign_in_event')
    op.drop_table('sign_in_event')
    op.drop_index(op.f('ix_recovery_code_user_id'), table_name='recovery_code')
    op.drop_table('recovery_code')
    op.drop_table('second_factor')
