"""change log (issue 36 §1)

``change_log``: every committed change of an entity, written by triggers in the transaction
of the change (every path: ORM, the entity batch's Core statements, imports, check-ins), in
the order of commits, for the change feed and the webhooks (labapp/changefeed/).

- ``entity``: an insert is a ``create``, an update that gives the entity a new version an
  ``update``, a delete a ``delete`` (its actor: the ``modified_by`` the deleting service set
  just before). An update that leaves the version alone (counters, cleared references of a
  deleted department) is no change of the entity's own.
- ``storage_log``: a check-in, check-out or location move renames the ``update`` its
  version bump wrote to ``checkin``, ``checkout`` or ``move`` (the last entry of the entity
  in the transaction wins: a move between two places is a check-out then a check-in). The
  entry carries the change's own time; on SQLite that equality is what ties the two (a
  change of an earlier transaction is never renamed), on PostgreSQL the change's still
  missing number.

Numbering. SQLite's writers take turns, so the trigger gives each change the next number at
once. PostgreSQL's transactions commit in any order, so a number given at insert could
become visible after a larger one a reader has already passed. There a change is written
with ``seq`` NULL, the first change of a transaction adds the transaction to
``change_log_pending``, and that row's deferred constraint trigger runs as the transaction
commits: it takes a transaction-level advisory lock (released only once the commit is
visible), numbers the transaction's changes after the largest number committed, and removes
the row. Commits that wrote changes thus take their numbers one after another, in the order
in which they become visible: no reader ever sees a number before a smaller one. The lock is
held from the numbering to the end of the commit; other transactions wait for it only at
their own commit. (READ COMMITTED: the numbering statement must see the commit before it.)

Revision ID: f1a3c5e7b9d2
Revises: e3d1f7a9c5b2
Create Date: 2026-11-29

"""
import sqlalchemy as sa
from alembic import op

from labapp.advisory import CHANGE_LOG
from labapp.model.types import UtcDateTime

# revision identifiers, used by Alembic.
revision = 'f1a3c5e7b9d2'
down_revision = 'e3d1f7a9c5b2'
branch_labels = None
depends_on = None

COLUMNS = ("entity_id, eclass, kind, version, actor_id, created_utc, department_id, "
           "project_id, was_department_id, was_project_id")
# SQLite's DateTime text, microseconds included (%f gives milliseconds only).
SQLITE_NOW = "strftime('%Y-%m-%d %H:%M:%f000', 'now')"
SQLITE_NEXT = "(SELECT coalesce(max(seq), 0) + 1 FROM change_log)"
# The department and project an update moved the entity from; NULL when it did not move.
MOVED = "old.department_id IS NOT new.department_id OR old.project_id IS NOT new.project_id"


def _sqlite_triggers() -> list[str]:
    insert = f"INSERT INTO change_log (seq, {COLUMNS}) VALUES ({SQLITE_NEXT}, "
    return [
        "CREATE TRIGGER change_log_entity_insert AFTER INSERT ON entity BEGIN "
        f"{insert}new.id, new.eclass, 'create', new.version, new.modified_by, "
        "new.modified_utc, new.department_id, new.project_id, NULL, NULL); END",
        "CREATE TRIGGER change_log_entity_update AFTER UPDATE ON entity "
        "WHEN old.version IS NOT new.version BEGIN "
        f"{insert}new.id, new.eclass, 'update', new.version, new.modified_by, "
        "new.modified_utc, new.department_id, new.project_id, "
        f"CASE WHEN {MOVED} THEN old.department_id END, "
        f"CASE WHEN {MOVED} THEN old.project_id END); END",
        "CREATE TRIGGER change_log_entity_delete AFTER DELETE ON entity BEGIN "
        f"{insert}old.id, old.eclass, 'delete', old.version, old.modified_by, "
        f"{SQLITE_NOW}, old.department_id, old.project_id, NULL, NULL); END",
        "CREATE TRIGGER change_log_storage_log AFTER INSERT ON storage_log BEGIN "
        "UPDATE change_log SET kind = new.action WHERE seq = (SELECT max(seq) FROM "
        "change_log WHERE entity_id = new.entity_id) AND kind <> 'create' "
        "AND kind <> 'delete' AND created_utc = new.timestamp_utc; END",
    ]


_PG_PENDING = ("INSERT INTO change_log_pending (tx) VALUES "
               "(pg_current_xact_id()::text::bigint) ON CONFLICT DO NOTHING")

_PG_ENTITY_INSERT = f"""
CREATE FUNCTION change_log_entity_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO change_log ({COLUMNS})
    SELECT id, eclass, 'create', version, modified_by, modified_utc, department_id,
           project_id, NULL, NULL FROM new_rows;
    IF FOUND THEN {_PG_PENDING}; END IF;
    RETURN NULL;
END $$"""

_PG_ENTITY_UPDATE = f"""
CREATE FUNCTION change_log_entity_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO change_log ({COLUMNS})
    SELECT n.id, n.eclass, 'update', n.version, n.modified_by, n.modified_utc,
           n.department_id, n.project_id,
           CASE WHEN o.department_id IS DISTINCT FROM n.department_id
                  OR o.project_id IS DISTINCT FROM n.project_id THEN o.department_id END,
           CASE WHEN o.department_id IS DISTINCT FROM n.department_id
                  OR o.project_id IS DISTINCT FROM n.project_id THEN o.project_id END
    FROM new_rows n JOIN old_rows o ON o.id = n.id
    WHERE o.version IS DISTINCT FROM n.version
    ORDER BY n.id;
    IF FOUND THEN {_PG_PENDING}; END IF;
    RETURN NULL;
END $$"""

_PG_ENTITY_DELETE = f"""
CREATE FUNCTION change_log_entity_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO change_log ({COLUMNS})
    SELECT id, eclass, 'delete', version, modified_by, now() AT TIME ZONE 'UTC',
           department_id, project_id, NULL, NULL FROM old_rows;
    IF FOUND THEN {_PG_PENDING}; END IF;
    RETURN NULL;
END $$"""

# The last storage log entry of each entity in the statement names its change's kind; the
# change is the entity's latest, not yet numbered (the transaction has not committed).
_PG_STORAGE_LOG = """
CREATE FUNCTION change_log_storage_log() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE change_log c SET kind = s.action
    FROM (SELECT DISTINCT ON (entity_id) entity_id, action FROM new_rows
          ORDER BY entity_id, id DESC) s
    WHERE c.entity_id = s.entity_id AND c.seq IS NULL
      AND c.kind NOT IN ('create', 'delete')
      AND c.id = (SELECT max(id) FROM change_log l
                  WHERE l.entity_id = s.entity_id AND l.seq IS NULL);
    RETURN NULL;
END $$"""

_PG_NUMBER = f"""
CREATE FUNCTION change_log_number() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock({CHANGE_LOG}, 0);
    UPDATE change_log c SET seq = numbered.base + numbered.n
    FROM (SELECT id, row_number() OVER (ORDER BY id) AS n,
                 (SELECT coalesce(max(seq), 0) FROM change_log) AS base
          FROM change_log WHERE seq IS NULL) numbered
    WHERE c.id = numbered.id;
    DELETE FROM change_log_pending WHERE tx = NEW.tx;
    RETURN NULL;
END $$"""


def _postgresql_statements() -> list[str]:
    return [
        _PG_ENTITY_INSERT, _PG_ENTITY_UPDATE, _PG_ENTITY_DELETE, _PG_STORAGE_LOG, _PG_NUMBER,
        "CREATE TRIGGER change_log_entity_insert AFTER INSERT ON entity "
        "REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT "
        "EXECUTE FUNCTION change_log_entity_insert()",
        "CREATE TRIGGER change_log_entity_update AFTER UPDATE ON entity "
        "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT "
        "EXECUTE FUNCTION change_log_entity_update()",
        "CREATE TRIGGER change_log_entity_delete AFTER DELETE ON entity "
        "REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT "
        "EXECUTE FUNCTION change_log_entity_delete()",
        "CREATE TRIGGER change_log_storage_log AFTER INSERT ON storage_log "
        "REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT "
        "EXECUTE FUNCTION change_log_storage_log()",
        "CREATE CONSTRAINT TRIGGER change_log_number AFTER INSERT ON change_log_pending "
        "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION change_log_number()",
    ]


def upgrade() -> None:
    big = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
    op.create_table(
        "change_log",
        sa.Column("id", big, primary_key=True, autoincrement=True),
        sa.Column("seq", sa.BigInteger(), nullable=True),
        sa.Column("entity_id", sa.String(64), nullable=False),
        sa.Column("eclass", sa.String(32), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("actor_id", sa.String(64), nullable=True),
        sa.Column("created_utc", UtcDateTime(), nullable=False),
        sa.Column("department_id", sa.String(64), nullable=True),
        sa.Column("project_id", sa.String(64), nullable=True),
        sa.Column("was_department_id", sa.String(64), nullable=True),
        sa.Column("was_project_id", sa.String(64), nullable=True),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_change_log_seq", "change_log", ["seq"], unique=True)
    op.create_index("ix_change_log_entity_id_seq", "change_log", ["entity_id", "seq"])
    op.create_index("ix_change_log_created_utc", "change_log", ["created_utc"])
    op.create_index("ix_change_log_unnumbered", "change_log", ["id"],
                    postgresql_where=sa.text("seq IS NULL"), sqlite_where=sa.text("seq IS NULL"))
    op.create_table("change_log_pending",
                    sa.Column("tx", sa.BigInteger(), primary_key=True, autoincrement=False))
    op.create_table("change_log_horizon",
                    sa.Column("id", sa.Integer(), primary_key=True),
                    sa.Column("removed_through", sa.BigInteger(), nullable=False))
    op.execute("INSERT INTO change_log_horizon (id, removed_through) VALUES (1, 0)")
    if op.get_bind().dialect.name == "postgresql":
        for statement in _postgresql_statements():
            op.execute(statement)
    else:
        for statement in _sqlite_triggers():
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for trigger, table in (("change_log_entity_insert", "entity"),
                               ("change_log_entity_update", "entity"),
                               ("change_log_entity_delete", "entity"),
                               ("change_log_storage_log", "storage_log"),
                               ("change_log_number", "change_log_pending")):
            op.execute(f"DROP TRIGGER {trigger} ON {table}")
        for function in ("change_log_entity_insert", "change_log_entity_update",
                         "change_log_entity_delete", "change_log_storage_log",
                         "change_log_number"):
            op.execute(f"DROP FUNCTION {function}()")
    else:
        for trigger in ("entity_insert", "entity_update", "entity_delete", "storage_log"):
            op.execute(f"DROP TRIGGER change_log_{trigger}")
    op.drop_table("change_log_horizon")
    op.drop_table("change_log_pending")
    op.drop_table("change_log")
