"""database views

The views of datamodel.md "Database views", served by /api/query/view, the dataset and OData
(labapp/query/dbviews.py describes them): one flat view per entity class (every stored field,
``attributes`` as JSON text) and the overviews SampleOverview, StorageOverview,
StepSampleInput and ExperimentProgress. Columns are snake_case.

On PostgreSQL each view is named like its class ("Sample", quoted: mixed case). SQLite
matches names case-insensitively, so "Sample" would clash with the table ``sample``: there
every view is named ``v_<Name>``. The SQL is otherwise the same on both databases.

A later migration that drops or rewrites a column of a table these views read must drop the
views first and create them again afterwards (PostgreSQL refuses, and SQLite's batch mode
cannot rename a table a view refers to).

Revision ID: e2b2e5c79bf7
Revises: e9f2c177a77a
Create Date: 2026-11-21

"""
from alembic import op

# revision identifiers, used by Alembic.
revision = 'e2b2e5c79bf7'
down_revision = 'e9f2c177a77a'
branch_labels = None
depends_on = None

ENTITY_COLUMNS = ("id", "eclass", "name", "description", "barcode", "status", "type", "user_id",
                  "department_id", "project_id", "attributes", "created_by", "created_utc",
                  "modified_by", "modified_utc", "version")

# Flat views: class → (table, the class table's own columns).
CLASS_TABLES = {
    "Department": ("department", ("parent_id",)),
    "Project": ("project", ("start_date", "end_date")),
    "User": ("app_user", ("email", "initials", "is_active", "last_login_utc")),
    "Experiment": ("experiment", ("start_date", "end_date")),
    "Step": ("step", ("experiment_id", "step_index", "start_date", "end_date")),
    "StepInput": ("step_input", ("step_id", "input_class", "input_id", "input_position",
                                 "amount", "unit")),
    "Sample": ("sample", ("parent_id", "experiment_id", "step_id", "origin_id", "plate_id",
                          "well", "location_id", "position", "amount", "unit", "concentration",
                          "concentration_unit", "date_taken", "expiry_date")),
    "Plate": ("plate", ("experiment_id", "step_id", "rows", "columns", "location_id",
                        "position")),
    "Fermentation": ("fermentation", ("experiment_id", "origin_id", "organism", "start_time",
                                      "end_time", "working_volume")),
    "Request": ("request", ("assignee_id", "due_date", "priority", "subject_class",
                            "subject_id")),
    "Location": ("location", ("parent_id", "location_type", "capacity", "rows", "columns",
                              "temperature", "position", "hierarchy")),
    "Note": ("note", ("subject_class", "subject_id", "content")),
    "File": ("file", ("subject_class", "subject_id", "media_type", "size", "sha256")),
}

SAMPLE_OVERVIEW = """
SELECT e."id", e."eclass", e."name", e."barcode", e."status", e."type", e."user_id",
       owner."name" AS "owner_name", e."department_id", e."project_id",
       s."experiment_id", experiment."name" AS "experiment_name",
       s."step_id", step."name" AS "step_name",
       s."plate_id", plate."name" AS "plate_name", s."well",
       place."id" AS "location_id", place."name" AS "location_name",
       location."hierarchy" AS "location_path", s."position",
       s."amount", s."unit", s."concentration", s."concentration_unit",
       s."date_taken", s."expiry_date", e."created_utc", e."modified_utc"
FROM "sample" s
JOIN "entity" e ON e."id" = s."id"
LEFT JOIN "entity" owner ON owner."id" = e."user_id"
LEFT JOIN "entity" experiment ON experiment."id" = s."experiment_id"
LEFT JOIN "entity" step ON step."id" = s."step_id"
LEFT JOIN "entity" plate ON plate."id" = s."plate_id"
LEFT JOIN "plate" plate_row ON plate_row."id" = s."plate_id"
LEFT JOIN "location" location ON location."id" = COALESCE(s."location_id", plate_row."location_id")
LEFT JOIN "entity" place ON place."id" = location."id"
"""

STORAGE_OVERVIEW = """
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

STEP_SAMPLE_INPUT = """
SELECT e."id", e."eclass", e."name", e."status", e."department_id", e."project_id",
       i."step_id", step."name" AS "step_name", step_row."step_index",
       step."status" AS "step_status", step_row."experiment_id",
       experiment."name" AS "experiment_name", experiment."status" AS "experiment_status",
       i."input_class", i."input_id", input."name" AS "input_name", i."input_position",
       i."amount", i."unit", e."created_utc"
FROM "step_input" i
JOIN "entity" e ON e."id" = i."id"
LEFT JOIN "step" step_row ON step_row."id" = i."step_id"
LEFT JOIN "entity" step ON step."id" = i."step_id"
LEFT JOIN "entity" experiment ON experiment."id" = step_row."experiment_id"
LEFT JOIN "entity" input ON input."id" = i."input_id"
"""

EXPERIMENT_PROGRESS = """
SELECT e."id", e."eclass", e."name", e."status", e."type", e."user_id", e."department_id",
       e."project_id", x."start_date", x."end_date",
       COALESCE(steps."total", 0) AS "steps_total",
       COALESCE(steps."initial", 0) AS "steps_initial",
       COALESCE(steps."in_progress", 0) AS "steps_in_progress",
       COALESCE(steps."completed", 0) AS "steps_completed",
       COALESCE(steps."canceled", 0) AS "steps_canceled",
       e."created_utc", e."modified_utc"
FROM "experiment" x
JOIN "entity" e ON e."id" = x."id"
LEFT JOIN (SELECT st."experiment_id" AS "experiment_id", COUNT(*) AS "total",
                  SUM(CASE WHEN se."status" = 'Initial' THEN 1 ELSE 0 END) AS "initial",
                  SUM(CASE WHEN se."status" = 'InProgress' THEN 1 ELSE 0 END) AS "in_progress",
                  SUM(CASE WHEN se."status" = 'Completed' THEN 1 ELSE 0 END) AS "completed",
                  SUM(CASE WHEN se."status" = 'Canceled' THEN 1 ELSE 0 END) AS "canceled"
           FROM "step" st
           JOIN "entity" se ON se."id" = st."id"
           GROUP BY st."experiment_id") steps ON steps."experiment_id" = x."id"
"""

OVERVIEWS = {"SampleOverview": SAMPLE_OVERVIEW, "StorageOverview": STORAGE_OVERVIEW,
             "StepSampleInput": STEP_SAMPLE_INPUT, "ExperimentProgress": EXPERIMENT_PROGRESS}


def _view_name(name: str) -> str:
    """The quoted name of a view on the connected database."""
    prefix = "v_" if op.get_bind().dialect.name == "sqlite" else ""
    return f'"{prefix}{name}"'


def _flat_view(table: str, columns: tuple[str, ...]) -> str:
    selected = [f'CAST(e."{name}" AS TEXT) AS "{name}"' if name == "attributes" else f'e."{name}"'
                for name in ENTITY_COLUMNS]
    selected += [f't."{name}"' for name in columns]
    return (f'SELECT {", ".join(selected)} FROM "{table}" t '
            f'JOIN "entity" e ON e."id" = t."id"')


def upgrade():
    for name, (table, columns) in CLASS_TABLES.items():
        op.execute(f"CREATE VIEW {_view_name(name)} AS {_flat_view(table, columns)}")
    for name, query in OVERVIEWS.items():
        op.execute(f"CREATE VIEW {_view_name(name)} AS {query}")


def downgrade():
    for name in [*OVERVIEWS, *CLASS_TABLES][::-1]:
        op.execute(f"DROP VIEW IF EXISTS {_view_name(name)}")
