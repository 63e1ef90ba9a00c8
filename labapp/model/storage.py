"""Storage locations: sites, rooms, freezers, racks, boxes..."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import Float, ForeignKey, Index, Integer, String, text
from sqlalchemy.orm import Mapped, mapped_column

from labapp.db import Model
from labapp.model.base import Entity, ref_column, subclass_id
from labapp.model.types import UtcDateTime

LOCATION_TYPES = ("Site", "Room", "Freezer", "Fridge", "Shelf", "Rack", "Box", "Cage", "Other")


class Location(Entity):
    """A place that holds samples and plates; ``capacity`` None means unlimited."""

    __tablename__ = "location"

    id: Mapped[str] = subclass_id()
    parent_id: Mapped[str | None] = ref_column("Location", "location")
    location_type: Mapped[str | None] = mapped_column(String(16), default="Other",
                                                      info={"choices": LOCATION_TYPES})
    capacity: Mapped[int | None] = mapped_column(Integer)
    rows: Mapped[int | None] = mapped_column(Integer)
    columns: Mapped[int | None] = mapped_column(Integer)
    temperature: Mapped[float | None] = mapped_column(Float)
    position: Mapped[str | None] = mapped_column(String(32))
    hierarchy: Mapped[str | None] = mapped_column(String(1024), info={"readOnly": True})


class StorageLogEntry(Model):
    """One check-in, check-out or location move (decisions §10), written in the same
    transaction as the change. ``from_location_id`` is set only on a ``move`` (a location
    given a new parent): where it was before."""

    __tablename__ = "storage_log"
    __table_args__ = (Index("ix_storage_log_location_id_id", "location_id", "id"),
                      # Only moves name a location they came from: a partial index keeps
                      # SQLite's statistics from counting every check-in's NULL as one
                      # value, which made the log of a box scan the whole table.
                      Index("ix_storage_log_from_location_id_id", "from_location_id", "id",
                            sqlite_where=text("from_location_id IS NOT NULL"),
                            postgresql_where=text("from_location_id IS NOT NULL")),
                      Index("ix_storage_log_entity_id_id", "entity_id", "id"),
                      Index("ix_storage_log_location_id_action", "location_id", "action"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    action: Mapped[str] = mapped_column(String(16))
    eclass: Mapped[str] = mapped_column(String(32))
    entity_id: Mapped[str] = mapped_column(String(64), ForeignKey("entity.id",
                                                                  ondelete="CASCADE"))
    location_id: Mapped[str | None] = mapped_column(String(64), ForeignKey("location.id"))
    from_location_id: Mapped[str | None] = mapped_column(String(64),
                                                         ForeignKey("location.id"))
    position: Mapped[str | None] = mapped_column(String(32))
    user_id: Mapped[str | None] = mapped_column(String(64))
    timestamp_utc: Mapped[datetime] = mapped_column(UtcDateTime)


class LocationCount(Model):
    """The folded number of items stored directly in one location: its samples that are not
    on a plate, and its plates (what the storage tree counts). Database triggers on
    ``sample`` and ``plate`` (migration ``c8e2a4f6d1b3``) append to
    :class:`LocationCountChange` in the transaction of every write that puts an item in or
    takes it out; :mod:`labapp.folding` folds them here. The true count is the sum of both
    tables, so the tree reads a row or two per location instead of every stored item
    (bench/runs/2026-11-25-million-2.md: 80% of the tree page at 500,000 tubes on PostgreSQL)."""

    __tablename__ = "location_count"

    location_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    n: Mapped[int] = mapped_column(Integer)


class LocationCountChange(Model):
    """A change of one location's count not folded yet, written by the triggers."""

    __tablename__ = "location_count_change"
    # A fold deletes the changes it read: an id is never reused. The tree probes the changes
    # of each location it counts, by this index.
    __table_args__ = (Index("ix_location_count_change_location_id", "location_id"),
                      {"sqlite_autoincrement": True})

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    location_id: Mapped[str] = mapped_column(String(64))
    n: Mapped[int] = mapped_column(Integer)
