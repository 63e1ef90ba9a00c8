"""location counts (issue 24)

How many items each location holds directly (its samples not on a plate, and its plates), as
the storage tree counts them: ``location_count`` (folded) and ``location_count_change``
(changes not folded yet, with an index by location), filled from the items already stored,
then kept by triggers on ``sample`` and ``plate``, as the entity tallies are
(migration ``a9d3f6b2c8e1``).

- SQLite: a row trigger each for insert and delete of a counted item, and one for an update
  of ``location_id`` (or of a sample's ``plate_id``) that changes where it counts, each
  appending -1 for where the item counted and +1 for where it counts now.
- PostgreSQL: statement triggers with transition tables, so a check-in of 96 tubes into one
  box appends one row, and an update that moves nothing appends none.

Revision ID: c8e2a4f6d1b3
Revises: a1c4e7f9b2d6
Create Date: 2026-11-28

"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = 'c8e2a4f6d1b3'
down_revision = 'a1c4e7f9b2d6'
branch_labels = None
depends_on = None

# Where an item of each table counts: its location, unless a sample lies on a plate (the
# plate counts instead).
COUNTED = {"sample": "{row}.location_id IS NOT NULL AND {row}.plate_id IS NULL",
           "plate": "{row}.location_id IS NOT NULL"}
APPEND = "INSERT INTO location_count_change (location_id, n)"


def _sqlite_triggers(table: str) -> list[str]:
    counted = COUNTED[table]
    old, new = counted.format(row="old"), counted.format(row="new")
    columns = "location_id, plate_id" if table == "sample" else "location_id"
    return [
        f"CREATE TRIGGER location_count_{table}_insert AFTER INSERT ON {table} "
        f"WHEN {new} BEGIN {APPEND} VALUES (new.location_id, 1); END",
        f"CREATE TRIGGER location_count_{table}_delete AFTER DELETE ON {table} "
        f"WHEN {old} BEGIN {APPEND} VALUES (old.location_id, -1); END",
        f"CREATE TRIGGER location_count_{table}_update AFTER UPDATE OF {columns} ON {table} "
        f"WHEN old.location_id IS NOT new.location_id OR ({old}) IS NOT ({new}) BEGIN "
        f"{APPEND} SELECT old.location_id, -1 WHERE {old}; "
        f"{APPEND} SELECT new.location_id, 1 WHERE {new}; END",
    ]


def _pg_rows(table: str, transition: str, n: int) -> str:
    where = COUNTED[table].format(row=transition)
    return f"SELECT location_id, {n} AS n FROM {transition} WHERE {where}"


def _pg_function(name: str, rows: str) -> str:
    return f"""
CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {APPEND}
    SELECT location_id, sum(n) FROM ({rows}) AS rows
    GROUP BY location_id HAVING sum(n) <> 0;
    RETURN NULL;
END $$"""


def _postgresql_triggers(table: str) -> list[str]:
    removed, added = _pg_rows(table, "removed", -1), _pg_rows(table, "added", 1)
    return [
        _pg_function(f"location_count_{table}_added", added),
        _pg_function(f"location_count_{table}_removed", removed),
        _pg_function(f"location_count_{table}_updated", f"{removed} UNION ALL {added}"),
        f"CREATE TRIGGER location_count_insert AFTER INSERT ON {table} REFERENCING NEW "
        f"TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION location_count_{table}_added()",
        f"CREATE TRIGGER location_count_delete AFTER DELETE ON {table} REFERENCING OLD "
        f"TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION "
        f"location_count_{table}_removed()",
        f"CREATE TRIGGER location_count_update AFTER UPDATE ON {table} REFERENCING OLD "
        f"TABLE AS removed NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION "
        f"location_count_{table}_updated()",
    ]


def upgrade():
    op.create_table(
        'location_count',
        sa.Column('location_id', sa.String(length=64), nullable=False),
        sa.Column('n', sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint('location_id', name=op.f('pk_location_count')),
    )
    op.create_table(
        'location_count_change',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('location_id', sa.String(length=64), nullable=False),
        sa.Column('n', sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_location_count_change')),
        sqlite_autoincrement=True,
    )
    op.create_index('ix_location_count_change_location_id', 'location_count_change',
                    ['location_id'])
    held = " UNION ALL ".join(
        f"SELECT location_id, count(*) AS n FROM {table} "
        f"WHERE {COUNTED[table].format(row=table)} GROUP BY location_id" for table in COUNTED)
    op.execute(f"INSERT INTO location_count (location_id, n) SELECT location_id, sum(n) "
               f"FROM ({held}) AS held GROUP BY location_id")
    postgresql = op.get_bind().dialect.name == "postgresql"
    for table in COUNTED:
        for statement in (_postgresql_triggers(table) if postgresql
                          else _sqlite_triggers(table)):
            op.execute(statement)


def downgrade():
    postgresql = op.get_bind().dialect.name == "postgresql"
    for table in COUNTED:
        for trigger in ("insert", "delete", "update"):
            if postgresql:
                op.execute(f"DROP TRIGGER location_count_{trigger} ON {table}")
            else:
                op.execute(f"DROP TRIGGER location_count_{table}_{trigger}")
        if postgresql:
            for function in ("added", "removed", "updated"):
                op.execute(f"DROP FUNCTION location_count_{table}_{function}()")
    op.drop_index('ix_location_count_change_location_id', table_name='location_count_change')
    op.drop_table('location_count_change')
    op.drop_table('location_count')
