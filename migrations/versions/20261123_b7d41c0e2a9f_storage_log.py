"""storage log

The check-in, check-out and move log of storage locations (decisions §10,
labapp/storage/log.py): one row per item checked in or out, one per location moved.

Revision ID: b7d41c0e2a9f
Revises: 3ac19168d4c7
Create Date: 2026-11-23

"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = 'b7d41c0e2a9f'
down_revision = '3ac19168d4c7'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('storage_log',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('action', sa.String(length=16), nullable=False),
    sa.Column('eclass', sa.String(length=32), nullable=False),
    sa.Column('entity_id', sa.String(length=64), nullable=False),
    sa.Column('location_id', sa.String(length=64), nullable=True),
    sa.Column('from_location_id', sa.String(length=64), nullable=True),
    sa.Column('position', sa.String(length=32), nullable=True),
    sa.Column('user_id', sa.String(length=64), nullable=True),
    sa.Column('timestamp_utc', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['entity_id'], ['entity.id'], name=op.f('fk_storage_log_entity_id_entity'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['from_location_id'], ['location.id'], name=op.f('fk_storage_log_from_location_id_location')),
    sa.ForeignKeyConstraint(['location_id'], ['location.id'], name=op.f('fk_storage_log_location_id_location')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_storage_log'))
    )
    with op.batch_alter_table('storage_log', schema=None) as batch_op:
        batch_op.create_index('ix_storage_log_entity_id_id', ['entity_id', 'id'], unique=False)
        batch_op.create_index('ix_storage_log_from_location_id_id', ['from_location_id', 'id'], unique=False)
        batch_op.create_index('ix_storage_log_location_id_action', ['location_id', 'action'], unique=False)
        batch_op.create_index('ix_storage_log_location_id_id', ['location_id', 'id'], unique=False)


def downgrade():
    with op.batch_alter_table('storage_log', schema=None) as batch_op:
        batch_op.drop_index('ix_storage_log_location_id_id')
        batch_op.drop_index('ix_storage_log_location_id_action')
        batch_op.drop_index('ix_storage_log_from_location_id_id')
        batch_op.drop_index('ix_storage_log_entity_id_id')
    op.drop_table('storage_log')
