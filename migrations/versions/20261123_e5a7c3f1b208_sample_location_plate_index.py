"""sample location and plate index

Storage counts the samples of a location that are not on a plate (the location tree, the
box page, the dashboards' storage-usage widget). Indexed on ``location_id`` alone, the
count read every sample row of the location to check ``plate_id``: 60 ms for 100,000
stored samples on SQLite. ``(location_id, plate_id)`` answers it from the index and still
serves every lookup by location, so it replaces ``ix_sample_location_id``.

Revision ID: e5a7c3f1b208
Revises: c4d8e2f6a913
Create Date: 2026-11-23

"""
from alembic import op

# revision identifiers, used by Alembic.
revision = 'e5a7c3f1b208'
down_revision = 'c4d8e2f6a913'
branch_labels = None
depends_on = None


def upgrade():
    op.create_index('ix_sample_location_id_plate_id', 'sample', ['location_id', 'plate_id'])
    op.drop_index('ix_sample_location_id', table_name='sample')


def downgrade():
    op.create_index('ix_sample_location_id', 'sample', ['location_id'])
    op.drop_index('ix_sample_location_id_plate_id', table_name='sample')
