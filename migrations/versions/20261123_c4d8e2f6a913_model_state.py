"""model state

The one row saying which data model (code plus extension files, decisions §14) the database
was last synchronised to, so every worker reloads the model after a sync (issue 14).

Revision ID: c4d8e2f6a913
Revises: b7c4e1a2d9f0
Create Date: 2026-11-23

"""
import sqlalchemy as sa
from alembic import op

import labapp.model.types

# revision identifiers, used by Alembic.
revision = 'c4d8e2f6a913'
down_revision = 'b7c4e1a2d9f0'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'model_state',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('generation', sa.Integer(), nullable=False),
        sa.Column('digest', sa.String(length=64), nullable=False),
        sa.Column('synced_utc', labapp.model.types.UtcDateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_model_state')))


def downgrade():
    op.drop_table('model_state')
