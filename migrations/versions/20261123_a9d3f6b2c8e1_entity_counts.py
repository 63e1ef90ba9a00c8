"""entity counts

The tallies of labapp/model/tallies.py: ``entity_count`` (folded counts per class, creation
day, status, department and project) and ``entity_count_change`` (changes not folded yet),
filled from the entities already there, then kept by triggers on ``entity``.

- SQLite: a row trigger each for insert and delete, and one for an update that changes a
  tally's key (``WHEN``), each appending +1 for the new row and -1 for the old one.
- PostgreSQL: statement triggers with transition tables, so a batch of 500 entities appends
  one row per distinct key instead of 500 rows; an update appends only the keys whose
  count changed.

Revision ID: a9d3f6b2c8e1
Revises: e5a7c3f1b208
Create Date: 2026-11-23

"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = 'a9d3f6b2c8e1'
down_revision = 'e5a7c3f1b208'
branch_labels = None
depends_on = None

COLUMNS = "eclass, day, status, department_id, project_id, n"


def _sqlite_key(row: str) -> str:
    return (f"{row}.eclass, date({row}.created_utc), {row}.status, "
            f"coalesce({row}.department_id, ''), coalesce({row}.project_id, '')")


def _sqlite_triggers() -> list[str]:
    append = f"INSERT INTO entity_count_change ({COLUMNS}) VALUES"
    changed = " OR ".join(f"old.{column} IS NOT new.{column}" for column in
                          ("eclass", "status", "department_id", "project_id"))
    return [
        f"CREATE TRIGGER entity_count_insert AFTER INSERT ON entity BEGIN "
        f"{append} ({_sqlite_key('new')}, 1); END",
        f"CREATE TRIGGER entity_count_delete AFTER DELETE ON entity BEGIN "
        f"{append} ({_sqlite_key('old')}, -1); END",
        f"CREATE TRIGGER entity_count_update AFTER UPDATE OF eclass, created_utc, status, "
        f"department_id, project_id ON entity "
        f"WHEN {changed} OR date(old.created_utc) IS NOT date(new.created_utc) BEGIN "
        f"{append} ({_sqlite_key('old')}, -1); {append} ({_sqlite_key('new')}, 1); END",
    ]


def _pg_rows(table: str, n: int) -> str:
    return (f"SELECT eclass, created_utc::date AS day, status, "
            f"coalesce(department_id, '') AS department_id, "
            f"coalesce(project_id, '') AS project_id, {n} AS n FROM {table}")


def _pg_function(name: str, rows: str) -> str:
    return f"""
CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO entity_count_change ({COLUMNS})
    SELECT eclass, day, status, department_id, project_id, sum(n)
    FROM ({rows}) AS rows
    GROUP BY eclass, day, status, department_id, project_id
    HAVING sum(n) <> 0;
    RETURN NULL;
END $$"""


def _postgresql_triggers() -> list[str]:
    return [
        _pg_function("entity_count_added", _pg_rows("added", 1)),
        _pg_function("entity_count_removed", _pg_rows("removed", -1)),
        _pg_function("entity_count_updated",
                     f"{_pg_rows('removed', -1)} UNION ALL {_pg_rows('added', 1)}"),
        "CREATE TRIGGER entity_count_insert AFTER INSERT ON entity REFERENCING NEW TABLE AS "
        "added FOR EACH STATEMENT EXECUTE FUNCTION entity_count_added()",
        "CREATE TRIGGER entity_count_delete AFTER DELETE ON entity REFERENCING OLD TABLE AS "
        "removed FOR EACH STATEMENT EXECUTE FUNCTION entity_count_removed()",
        "CREATE TRIGGER entity_count_update AFTER UPDATE ON entity REFERENCING OLD TABLE AS "
        "removed NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION "
        "entity_count_updated()",
    ]


def _tally_columns() -> list[sa.Column]:
    """The columns both tables share: a tally's key and its count."""
    return [
        sa.Column('eclass', sa.String(length=32), nullable=False),
        sa.Column('day', sa.Date(), nullable=False),
        sa.Column('status', sa.String(length=32), nullable=False),
        sa.Column('department_id', sa.String(length=64), nullable=False),
        sa.Column('project_id', sa.String(length=64), nullable=False),
        sa.Column('n', sa.Integer(), nullable=False),
    ]


def upgrade():
    op.create_table(
        'entity_count', *_tally_columns(),
        sa.PrimaryKeyConstraint('eclass', 'day', 'status', 'department_id', 'project_id',
                                name=op.f('pk_entity_count')),
    )
    op.create_table(
        'entity_count_change',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        *_tally_columns(),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_entity_count_change')),
        sqlite_autoincrement=True,
    )
    postgresql = op.get_bind().dialect.name == "postgresql"
    day = "created_utc::date" if postgresql else "date(created_utc)"
    op.execute(f"INSERT INTO entity_count ({COLUMNS}) "
               f"SELECT eclass, {day}, status, coalesce(department_id, ''), "
               f"coalesce(project_id, ''), count(*) FROM entity "
               f"GROUP BY eclass, {day}, status, coalesce(department_id, ''), "
               f"coalesce(project_id, '')")
    for statement in _postgresql_triggers() if postgresql else _sqlite_triggers():
        op.execute(statement)


def downgrade():
    for trigger in ("insert", "delete", "update"):
        op.execute(f"DROP TRIGGER entity_count_{trigger}"
                   + (" ON entity" if op.get_bind().dialect.name == "postgresql" else ""))
    if op.get_bind().dialect.name == "postgresql":
        for function in ("added", "removed", "updated"):
            op.execute(f"DROP FUNCTION entity_count_{function}()")
    op.drop_table('entity_count_change')
    op.drop_table('entity_count')
