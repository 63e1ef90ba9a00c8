"""Entity tallies: how many entities of each class, creation day, status, department and
project there are, kept by database triggers for the dashboards' counting widgets.

Counting a class's statuses or its creations per week as a reader meant aggregating every
visible row (40-90 ms at 100,000 entities, bench/runs/2026-11-23-dashboards-2.md); the
tallies hold a few rows per class and day. The triggers on ``entity`` (migration
``a9d3f6b2c8e1``) only ever append to :class:`EntityCountChange`, +1 for a row as it is now
and -1 for what it was, so concurrent writers never wait on a shared counter row;
:func:`labapp.dashboards.tally_folding.fold` adds the changes into :class:`EntityCount` (the
worker does it as they come). The true count is always the sum of both tables.

No department or project is stored as ``''`` (never an id), so that a tally's key has no
NULL in it.
"""
from __future__ import annotations

from datetime import date

from sqlalchemy import Date, Integer, PrimaryKeyConstraint, String
from sqlalchemy.orm import Mapped, mapped_column

from labapp.db import Model

NO_OWNER = ""


class _Tally:
    """A tally's key (class, creation day, status, department, project) and its count."""

    eclass: Mapped[str] = mapped_column(String(32))
    day: Mapped[date] = mapped_column(Date)
    status: Mapped[str] = mapped_column(String(32))
    department_id: Mapped[str] = mapped_column(String(64))
    project_id: Mapped[str] = mapped_column(String(64))
    n: Mapped[int] = mapped_column(Integer)


class EntityCount(_Tally, Model):
    """The folded count of one key."""

    __tablename__ = "entity_count"
    __table_args__ = (PrimaryKeyConstraint("eclass", "day", "status", "department_id",
                                           "project_id"),)


class EntityCountChange(_Tally, Model):
    """A change of one key's count not folded yet (+1 or -1), written by the triggers."""

    __tablename__ = "entity_count_change"
    # A fold deletes the changes it read: like the search queue, an id is never reused.
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
