"""Bookkeeping tables: id sequences, audit trail and domain events."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from labapp.db import Model
from labapp.model.types import JsonObject, UtcDateTime


class Sequence(Model):
    """A number sequence for generated ids: ``prefix`` + ``next_value`` padded to ``min_digits``."""

    __tablename__ = "sequence"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    prefix: Mapped[str] = mapped_column(String(32), default="")
    min_digits: Mapped[int] = mapped_column(Integer, default=5)
    next_value: Mapped[int] = mapped_column(Integer, default=1)
    type: Mapped[str | None] = mapped_column(String(64))


class AuditEvent(Model):
    """One change of one entity: ``changes`` maps each field to ``{old, new}``."""

    __tablename__ = "audit_event"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    entity_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("entity.id", ondelete="CASCADE"), index=True)
    action: Mapped[str] = mapped_column(String(16))
    version: Mapped[int] = mapped_column(Integer)
    user_id: Mapped[str | None] = mapped_column(String(64))
    timestamp_utc: Mapped[datetime] = mapped_column(UtcDateTime)
    changes: Mapped[dict[str, Any]] = mapped_column(JsonObject, default=dict)


class EntityEvent(Model):
    """A domain event of an entity (Created, StatusChanged, FileAdded, ...)."""

    __tablename__ = "entity_event"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    entity_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("entity.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(32))
    user_id: Mapped[str | None] = mapped_column(String(64))
    # Indexed for the latest events first (the recent-activity widget of dashboards).
    timestamp_utc: Mapped[datetime] = mapped_column(UtcDateTime, index=True)
    data: Mapped[dict[str, Any]] = mapped_column(JsonObject, default=dict)


class ModelState(Model):
    """The one row saying which data model the database was last synchronised to: every
    worker compares ``generation`` with the one it loaded and reloads the model when it
    moved (``POST /api/sync`` in another worker)."""

    __tablename__ = "model_state"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    generation: Mapped[int] = mapped_column(Integer, default=0)
    digest: Mapped[str] = mapped_column(String(64), default="")
    synced_utc: Mapped[datetime | None] = mapped_column(UtcDateTime)


class WorkerProcess(Model):
    """A process that runs jobs on a PostgreSQL installation (:mod:`labapp.liveness`): its
    row is written when it starts and removed when it stops cleanly; it is alive while it
    holds its advisory lock, which the server drops when the process dies. SQLite
    installations keep lock files instead and leave this table empty."""

    __tablename__ = "worker_process"

    id: Mapped[str] = mapped_column(String(100), primary_key=True)
    role: Mapped[str] = mapped_column(String(16))
    host: Mapped[str] = mapped_column(String(64))
    pid: Mapped[int] = mapped_column(Integer)
    started_utc: Mapped[datetime] = mapped_column(UtcDateTime)
