"""spreadsheet imports (issue 22)

An import job is one uploaded file to import into one class, processed by the worker;
``import_row`` holds the outcome of each of its rows (paged by the API and the wizard);
``saved_mapping`` the column mappings users saved per class and source name.

Revision ID: e4b8c2d6f0a3
Revises: d1a7e5c3b9f2
Create Date: 2026-11-25

"""
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision = 'e4b8c2d6f0a3'
down_revision = 'd1a7e5c3b9f2'
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')


def upgrade():
    op.create_table('import_job',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('owner_id', sa.String(length=64), nullable=False),
    sa.Column('eclass', sa.String(length=32), nullable=False),
    sa.Column('filename', sa.String(length=255), nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('size', sa.BigInteger(), nullable=False),
    sa.Column('sheet', sa.String(length=255), nullable=True),
    sa.Column('mapping', JSON, nullable=False),
    sa.Column('match', sa.String(length=64), nullable=True),
    sa.Column('dry_run', sa.Boolean(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('counts', JSON, nullable=False),
    sa.Column('progress_done', sa.Integer(), nullable=False),
    sa.Column('progress_total', sa.Integer(), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('upload', sa.String(length=255), nullable=False),
    sa.Column('dry_run_id', sa.String(length=32), nullable=True),
    sa.Column('created_utc', sa.DateTime(), nullable=False),
    sa.Column('started_utc', sa.DateTime(), nullable=True),
    sa.Column('finished_utc', sa.DateTime(), nullable=True),
    sa.CheckConstraint("status IN ('queued', 'running', 'done', 'failed')", name=op.f('ck_import_job_status')),
    sa.ForeignKeyConstraint(['dry_run_id'], ['import_job.id'], name=op.f('fk_import_job_dry_run_id_import_job'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['owner_id'], ['app_user.id'], name=op.f('fk_import_job_owner_id_app_user'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_import_job')),
    sa.UniqueConstraint('dry_run_id', name=op.f('uq_import_job_dry_run_id'))
    )
    with op.batch_alter_table('import_job', schema=None) as batch_op:
        batch_op.create_index('ix_import_job_owner_id_created_utc', ['owner_id', 'created_utc'], unique=False)
        batch_op.create_index('ix_import_job_status_created_utc', ['status', 'created_utc'], unique=False)

    op.create_table('import_row',
    sa.Column('job_id', sa.String(length=32), nullable=False),
    sa.Column('row', sa.Integer(), autoincrement=False, nullable=False),
    sa.Column('outcome', sa.String(length=16), nullable=False),
    sa.Column('entity_id', sa.String(length=64), nullable=True),
    sa.Column('errors', JSON, nullable=False),
    sa.CheckConstraint("outcome IN ('create', 'update', 'unchanged', 'error')", name=op.f('ck_import_row_outcome')),
    sa.ForeignKeyConstraint(['job_id'], ['import_job.id'], name=op.f('fk_import_row_job_id_import_job'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('job_id', 'row', name=op.f('pk_import_row'))
    )
    with op.batch_alter_table('import_row', schema=None) as batch_op:
        batch_op.create_index('ix_import_row_job_id_outcome_row', ['job_id', 'outcome', 'row'], unique=False)

    op.create_table('saved_mapping',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('owner_id', sa.String(length=64), nullable=False),
    sa.Column('eclass', sa.String(length=32), nullable=False),
    sa.Column('source', sa.String(length=255), nullable=False),
    sa.Column('mapping', JSON, nullable=False),
    sa.Column('modified_utc', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['owner_id'], ['app_user.id'], name=op.f('fk_saved_mapping_owner_id_app_user'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_saved_mapping')),
    sa.UniqueConstraint('owner_id', 'eclass', 'source', name=op.f('uq_saved_mapping_owner_id'))
    )


def downgrade():
    op.drop_table('saved_mapping')
    with op.batch_alter_table('import_row', schema=None) as batch_op:
        batch_op.drop_index('ix_import_row_job_id_outcome_row')

    op.drop_table('import_row')
    with op.batch_alter_table('import_job', schema=None) as batch_op:
        batch_op.drop_index('ix_import_job_status_created_utc')
        batch_op.drop_index('ix_import_job_owner_id_created_utc')

    op.drop_table('import_job')
