"""actor version (issue 33 §6)

``app_user.actor_version``: a number the database replaces by a new one on every change of
what a user's actor is made of, so that each worker process may keep the actor's roles and
grant sets in memory and know, from the one statement that authenticates a request,
whether they are still true (``labapp.auth.actors``). A new number is never one used
before, even after a rolled-back transaction brought an older state back (with its own
number): PostgreSQL takes it from a sequence, which no rollback rewinds; SQLite draws 62
random bits. Triggers set it when a user is inserted and whatever path makes a change:

- a role given to, taken from or changed on the user (``user_role``);
- a grant to the user, or to the user's home department (``department_access``,
  ``project_access``: every member of a department the grant names as grantee);
- the account switched on or off (``app_user.is_active``), its name or home department
  changed (``entity``, rows of class User).

SQLite: row triggers per table and operation. PostgreSQL: a row trigger per table on a
plpgsql function (BEFORE triggers on ``app_user`` itself, sparing a second update of the
row); an entity update that changes no user's name or department fires nothing, thanks to
the trigger's WHEN.

Revision ID: 7b1d3f5a9c20
Revises: 5e3d9a7c1f42
Create Date: 2026-11-28

"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = '7b1d3f5a9c20'
down_revision = '5e3d9a7c1f42'
branch_labels = None
depends_on = None

SEQUENCE = "actor_version_seq"
# A number never used before: 62 random bits on SQLite (no sequences there), a sequence's
# next value on PostgreSQL.
SQLITE_NEW = "(random() & 4611686018427387903)"
POSTGRESQL_NEW = f"nextval('{SEQUENCE}')"
# The grant tables and the column naming a grantee department (its members hold the grant).
GRANT_TABLES = {"department_access": "access_department_id", "project_access": "department_id"}
USER_CHANGES = ("old.department_id IS NOT new.department_id OR old.name IS NOT new.name")


def _grantees(row: str, department_column: str) -> str:
    """The users a grant row reaches: its user, or the members of its grantee department."""
    return (f"id = {row}.user_id OR EXISTS (SELECT 1 FROM entity WHERE entity.id = "
            f"app_user.id AND entity.department_id = {row}.{department_column})")


def _bump(new: str) -> str:
    return f"UPDATE app_user SET actor_version = {new} WHERE "


def _sqlite_triggers() -> list[str]:
    bump = _bump(SQLITE_NEW)
    statements = [
        "CREATE TRIGGER actor_version_app_user_insert AFTER INSERT ON app_user "
        f"BEGIN {bump}id = new.id; END",
        "CREATE TRIGGER actor_version_user_role_insert AFTER INSERT ON user_role "
        f"BEGIN {bump}id = new.user_id; END",
        "CREATE TRIGGER actor_version_user_role_delete AFTER DELETE ON user_role "
        f"BEGIN {bump}id = old.user_id; END",
        "CREATE TRIGGER actor_version_user_role_update AFTER UPDATE ON user_role "
        f"BEGIN {bump}id IN (old.user_id, new.user_id); END",
        "CREATE TRIGGER actor_version_app_user_active AFTER UPDATE OF is_active ON app_user "
        f"WHEN old.is_active IS NOT new.is_active BEGIN {bump}id = new.id; END",
        "CREATE TRIGGER actor_version_entity_user AFTER UPDATE OF department_id, name ON "
        f"entity WHEN new.eclass = 'User' AND ({USER_CHANGES}) BEGIN {bump}id = new.id; END",
    ]
    for table, column in GRANT_TABLES.items():
        statements += [
            f"CREATE TRIGGER actor_version_{table}_insert AFTER INSERT ON {table} "
            f"BEGIN {bump}{_grantees('new', column)}; END",
            f"CREATE TRIGGER actor_version_{table}_delete AFTER DELETE ON {table} "
            f"BEGIN {bump}{_grantees('old', column)}; END",
            f"CREATE TRIGGER actor_version_{table}_update AFTER UPDATE ON {table} "
            f"BEGIN {bump}{_grantees('old', column)}; {bump}{_grantees('new', column)}; END",
        ]
    return statements


def _pg_function(name: str, old: str, new: str) -> str:
    bump = _bump(POSTGRESQL_NEW)
    return f"""
CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN {bump}{old}; END IF;
    IF TG_OP <> 'DELETE' THEN {bump}{new}; END IF;
    RETURN NULL;
END $$"""


def _postgresql_triggers() -> list[str]:
    statements = [
        _pg_function("actor_version_user_role", "id = OLD.user_id", "id = NEW.user_id"),
        "CREATE TRIGGER actor_version AFTER INSERT OR UPDATE OR DELETE ON user_role "
        "FOR EACH ROW EXECUTE FUNCTION actor_version_user_role()",
        """
CREATE FUNCTION actor_version_app_user() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.actor_version := nextval('actor_version_seq');
    RETURN NEW;
END $$""",
        "CREATE TRIGGER actor_version_insert BEFORE INSERT ON app_user FOR EACH ROW "
        "EXECUTE FUNCTION actor_version_app_user()",
        "CREATE TRIGGER actor_version BEFORE UPDATE OF is_active ON app_user FOR EACH ROW "
        "WHEN (OLD.is_active IS DISTINCT FROM NEW.is_active) "
        "EXECUTE FUNCTION actor_version_app_user()",
        _pg_function("actor_version_entity", "id = OLD.id", "id = NEW.id"),
        "CREATE TRIGGER actor_version AFTER UPDATE OF department_id, name ON entity "
        "FOR EACH ROW WHEN (NEW.eclass = 'User' AND (OLD.department_id IS DISTINCT FROM "
        "NEW.department_id OR OLD.name IS DISTINCT FROM NEW.name)) "
        "EXECUTE FUNCTION actor_version_entity()",
    ]
    for table, column in GRANT_TABLES.items():
        statements += [
            _pg_function(f"actor_version_{table}", _grantees("OLD", column),
                         _grantees("NEW", column)),
            f"CREATE TRIGGER actor_version AFTER INSERT OR UPDATE OR DELETE ON {table} "
            f"FOR EACH ROW EXECUTE FUNCTION actor_version_{table}()",
        ]
    return statements


def upgrade():
    op.add_column('app_user', sa.Column('actor_version', sa.BigInteger(), nullable=False,
                                        server_default=sa.text('0')))
    postgresql = op.get_bind().dialect.name == "postgresql"
    if postgresql:
        op.execute(f"CREATE SEQUENCE {SEQUENCE}")
    for statement in _postgresql_triggers() if postgresql else _sqlite_triggers():
        op.execute(statement)


def downgrade():
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER actor_version_insert ON app_user")
        for table in ("user_role", "app_user", "entity", *GRANT_TABLES):
            op.execute(f"DROP TRIGGER actor_version ON {table}")
            op.execute(f"DROP FUNCTION actor_version_{table}()")
        op.execute(f"DROP SEQUENCE {SEQUENCE}")
    else:
        triggers = ["app_user_insert", "user_role_insert", "user_role_delete", "user_role_update",
                    "app_user_active", "entity_user"]
        triggers += [f"{table}_{operation}" for table in GRANT_TABLES
                     for operation in ("insert", "delete", "update")]
        for trigger in triggers:
            op.execute(f"DROP TRIGGER actor_version_{trigger}")
    # Both databases drop a column in place (SQLite since 3.35), as 5e3d9a7c1f42 does.
    op.execute("ALTER TABLE app_user DROP COLUMN actor_version")
