"""saved views (issue 21 §2)

A saved view is a list's filter, columns and sort stored under a name by its owner, and
shared as dashboards are (``saved_view_share``: a user, a department, a project or a role).

Revision ID: d1a7e5c3b9f2
Revises: b93a606699dc
Create Date: 2026-11-25

"""
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision = 'd1a7e5c3b9f2'
down_revision = 'b93a606699dc'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('saved_view',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('eclass', sa.String(length=32), nullable=False),
    sa.Column('filter', sa.Text(), nullable=True),
    sa.Column('columns', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('orderby', sa.String(length=255), nullable=True),
    sa.Column('user_id', sa.String(length=64), nullable=False),
    sa.Column('created_utc', sa.DateTime(), nullable=False),
    sa.Column('modified_utc', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['app_user.id'], name=op.f('fk_saved_view_user_id_app_user'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_saved_view'))
    )
    with op.batch_alter_table('saved_view', schema=None) as batch_op:
        batch_op.create_index('ix_saved_view_user_id_eclass', ['user_id', 'eclass'], unique=False)

    op.create_table('saved_view_share',
    sa.Column('view_id', sa.String(length=32), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('target', sa.String(length=64), nullable=False),
    sa.CheckConstraint("kind IN ('user', 'department', 'project', 'role')", name=op.f('ck_saved_view_share_kind')),
    sa.ForeignKeyConstraint(['view_id'], ['saved_view.id'], name=op.f('fk_saved_view_share_view_id_saved_view'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('view_id', 'kind', 'target', name=op.f('pk_saved_view_share'))
    )
    with op.batch_alter_table('saved_view_share', schema=None) as batch_op:
        batch_op.create_index('ix_saved_view_share_kind_target', ['kind', 'target'], unique=False)


def downgrade():
    with op.batch_alter_table('saved_view_share', schema=None) as batch_op:
        batch_op.drop_index('ix_saved_view_share_kind_target')

    op.drop_table('saved_view_share')
    with op.batch_alter_table('saved_view', schema=None) as batch_op:
        batch_op.drop_index('ix_saved_view_user_id_eclass')

    op.drop_table('saved_view')
