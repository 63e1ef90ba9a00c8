"""Runs of the directory sync (``flask users sync`` and the worker's schedule)."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, Integer, Text
from sqlalchemy.orm import Mapped, mapped_column

from labapp.db import Model
from labapp.model.types import JsonObject, UtcDateTime


class DirectorySync(Model):
    """One run: when, whether it only looked (dry run), its counts and its changes.

    ``changes`` lists ``{"action", "username", "detail"}`` objects (``create``, ``update``,
    ``deactivate`` or ``skip``); ``error`` says why a run that could not finish stopped."""

    __tablename__ = "directory_sync"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    started_utc: Mapped[datetime] = mapped_column(UtcDateTime, index=True)
    finished_utc: Mapped[datetime] = mapped_column(UtcDateTime)
    dry_run: Mapped[bool] = mapped_column(Boolean, default=False)
    created: Mapped[int] = mapped_column(Integer, default=0)
    updated: Mapped[int] = mapped_column(Integer, default=0)
    deactivated: Mapped[int] = mapped_column(Integer, default=0)
    skipped: Mapped[int] = mapped_column(Integer, default=0)
    unchanged: Mapped[int] = mapped_column(Integer, default=0)
    changes: Mapped[list[dict[str, Any]]] = mapped_column(JsonObject, default=list)
    error: Mapped[str | None] = mapped_column(Text)
