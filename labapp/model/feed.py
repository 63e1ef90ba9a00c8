"""The change log: every committed change of an entity, in commit order (issue 36 §1).

Rows are written by database triggers in the transaction of the change (migration
``change_log``), whatever path made it — the ORM, the entity batch's Core statements, an
import, a check-in — so nothing the feed and the webhooks read from it can be missed.
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Index, Integer, String, text
from sqlalchemy.orm import Mapped, mapped_column

from labapp.db import Model
from labapp.model.types import UtcDateTime

# The kinds of change the triggers write; ``hidden`` is never stored: the feed says it to a
# caller who could read the entity before the change and cannot after it.
STORED_KINDS = ("create", "update", "delete", "checkin", "checkout", "move")


class ChangeLogEntry(Model):
    """One change of one entity.

    ``seq`` is the change's place in the feed: it grows in commit order and a reader who has
    seen ``seq`` never later meets a smaller one. SQLite's writers take turns, so its
    triggers give the next number at once; PostgreSQL's commit in any order, so a change
    waits with ``seq`` NULL until its transaction commits, and a deferred trigger numbers the
    transaction's changes then, one committing transaction after another (the migration
    says how). ``id`` is the order of writing, within a transaction too.

    The access labels are the entity's after the change (``department_id``,
    ``project_id``, ``eclass``); ``was_department_id`` and ``was_project_id`` hold the ones
    before it when the change moved the entity to another department or project, so a
    reader who could see it before and cannot after is told it left.
    """

    __tablename__ = "change_log"
    __table_args__ = (
        Index("ix_change_log_seq", "seq", unique=True),
        # A check-in, check-out or move names the change its own version bump wrote.
        Index("ix_change_log_entity_id_seq", "entity_id", "seq"),
        # Retention: the oldest changes first.
        Index("ix_change_log_created_utc", "created_utc"),
        # PostgreSQL: the changes of the committing transaction, waiting for their numbers
        # (another transaction's are invisible to it until they have theirs).
        Index("ix_change_log_unnumbered", "id", postgresql_where=text("seq IS NULL"),
              sqlite_where=text("seq IS NULL")),
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"),
                                    primary_key=True, autoincrement=True)
    seq: Mapped[int | None] = mapped_column(BigInteger)
    entity_id: Mapped[str] = mapped_column(String(64))
    eclass: Mapped[str] = mapped_column(String(32))
    kind: Mapped[str] = mapped_column(String(16))
    version: Mapped[int] = mapped_column(Integer)
    actor_id: Mapped[str | None] = mapped_column(String(64))
    created_utc: Mapped[datetime] = mapped_column(UtcDateTime)
    department_id: Mapped[str | None] = mapped_column(String(64))
    project_id: Mapped[str | None] = mapped_column(String(64))
    was_department_id: Mapped[str | None] = mapped_column(String(64))
    was_project_id: Mapped[str | None] = mapped_column(String(64))


class ChangeLogPending(Model):
    """PostgreSQL: one row per transaction that wrote changes, added by the first of them;
    its deferred trigger numbers the transaction's changes as it commits, and removes it.
    Always empty between transactions (and on SQLite)."""

    __tablename__ = "change_log_pending"

    tx: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)


class ChangeLogHorizon(Model):
    """The one row saying up to which ``seq`` the retention has removed changes: a cursor
    below it asks for changes that are gone (410)."""

    __tablename__ = "change_log_horizon"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    removed_through: Mapped[int] = mapped_column(BigInteger, default=0)
