"""storage overview limit

StorageOverview counts and limits as /api/storage/location does (decisions §10,
``limit_of`` and ``stored_counts`` in labapp/storage/service.py):

- ``stored``: the plates of the location and its samples that are not on a plate (a sample
  on a plate travels with it and is counted as the plate), not every sample;
- ``available``: the limit minus ``stored``, never below 0, null when unlimited. The limit
  is ``capacity``, or ``rows`` × ``columns`` for a grid without one, the smaller of the two
  when both are set. The view used ``capacity`` alone, so a 9 × 9 box said null where the
  API said 49.

The view is dropped and created again on both databases (named ``v_StorageOverview`` on
SQLite, as in the database views migration); ``tests/odata/test_storage_overview.py``
compares it with the API for every kind of location.

Revision ID: b93a606699dc
Revises: a9d3f6b2c8e1
Create Date: 2026-11-25

"""
from alembic import op

# revision identifiers, used by Alembic.
revision = 'b93a606699dc'
down_revision = 'a9d3f6b2c8e1'
branch_labels = None
depends_on = None

STORAGE_OVERVIEW = """
SELECT e."id", e."eclass", e."name", e."barcode", e."status", e."department_id",
       e."project_id", l."parent_id", l."location_type", l."capacity",
       counted."stored",
       CASE WHEN counted."most" > counted."stored" THEN counted."most" - counted."stored"
            WHEN counted."most" IS NOT NULL THEN 0 END AS "available",
       l."hierarchy" AS "path", l."rows", l."columns", l."temperature", l."position"
FROM "location" l
JOIN "entity" e ON e."id" = l."id"
JOIN (SELECT inner_location."id" AS "id",
             (SELECT COUNT(*) FROM "sample" s
              WHERE s."location_id" = inner_location."id" AND s."plate_id" IS NULL)
             + (SELECT COUNT(*) FROM "plate" p WHERE p."location_id" = inner_location."id")
             AS "stored",
             CASE WHEN inner_location."rows" > 0 AND inner_location."columns" > 0
                       AND (inner_location."capacity" IS NULL
                            OR inner_location."rows" * inner_location."columns"
                               < inner_location."capacity")
                  THEN inner_location."rows" * inner_location."columns"
                  ELSE inner_location."capacity" END AS "most"
      FROM "location" inner_location) counted ON counted."id" = l."id"
"""

# As created by e2b2e5c79bf7 (database views).
PREVIOUS_STORAGE_OVERVIEW = """
SELECT e."id", e."eclass", e."name", e."barcode", e."status", e."department_id",
       e."project_id", l."parent_id", l."location_type", l."capacity",
       counted."stored", l."capacity" - counted."stored" AS "available",
       l."hierarchy" AS "path", l."rows", l."columns", l."temperature", l."position"
FROM "location" l
JOIN "entity" e ON e."id" = l."id"
JOIN (SELECT inner_location."id" AS "id",
             (SELECT COUNT(*) FROM "sample" s WHERE s."location_id" = inner_location."id")
             + (SELECT COUNT(*) FROM "plate" p WHERE p."location_id" = inner_location."id")
             AS "stored"
      FROM "location" inner_location) counted ON counted."id" = l."id"
"""


def _view_name() -> str:
    """The quoted name of the view on the connected database."""
    prefix = "v_" if op.get_bind().dialect.name == "sqlite" else ""
    return f'"{prefix}StorageOverview"'


def _replace(query: str) -> None:
    op.execute(f"DROP VIEW IF EXISTS {_view_name()}")
    op.execute(f"CREATE VIEW {_view_name()} AS {query}")


def upgrade():
    _replace(STORAGE_OVERVIEW)


def downgrade():
    _replace(PREVIOUS_STORAGE_OVERVIEW)
