"""storage log: the from-location index holds moves only (issue 24)

Check-ins and check-outs leave ``from_location_id`` NULL. SQLite's ANALYZE counts those NULLs
as one value of 500,000 rows at a million samples, so the planner expected
``from_location_id = ?`` to match them all and scanned ``storage_log`` for a box's log (120 ms
per query at 500,000 entries, twice per box page). A partial index over the moves keeps the
statistics true; ``from_location_id = ?`` implies ``IS NOT NULL``, so both databases use it.

Revision ID: a1c4e7f9b2d6
Revises: f7c1a9e3b5d2
Create Date: 2026-11-25

"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = 'a1c4e7f9b2d6'
down_revision = 'f7c1a9e3b5d2'
branch_labels = None
depends_on = None

_MOVES = sa.text("from_location_id IS NOT NULL")


def upgrade():
    op.drop_index('ix_storage_log_from_location_id_id', table_name='storage_log')
    op.create_index('ix_storage_log_from_location_id_id', 'storage_log',
                    ['from_location_id', 'id'], sqlite_where=_MOVES, postgresql_where=_MOVES)


def downgrade():
    op.drop_index('ix_storage_log_from_location_id_id', table_name='storage_log')
    op.create_index('ix_storage_log_from_location_id_id', 'storage_log',
                    ['from_location_id', 'id'])
