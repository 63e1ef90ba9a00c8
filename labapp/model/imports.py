"""Spreadsheet imports (issue 22): the job of one uploaded file, the outcome of each of its
rows, and the column mappings users saved for a class and a source."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from labapp.db import Model
from labapp.model.types import JsonObject, UtcDateTime

JOB_STATUSES = ("queued", "running", "done", "failed")
ROW_OUTCOMES = ("create", "update", "unchanged", "error")


class ImportJob(Model):
    """One uploaded file to import into one class, processed by the worker.

    ``upload`` names the stored copy of the file (:mod:`labapp.imports.uploads`: a file of
    the uploads folder, or with the database store a content of that store found by
    ``sha256``); it lives as long as the job does. ``progress_done`` of ``progress_total``
    rows have been planned (``progress_total`` is None until the row count is known).
    ``counts`` maps each outcome of :data:`ROW_OUTCOMES` to its number of rows once the plan
    is made. ``worker`` names the process that claimed the job; while it runs, the job is
    failed as soon as that process is gone (:mod:`labapp.imports.workers`)."""

    __tablename__ = "import_job"
    __table_args__ = (
        CheckConstraint("status IN ('queued', 'running', 'done', 'failed')", name="status"),
        Index("ix_import_job_status_created_utc", "status", "created_utc"),
        Index("ix_import_job_owner_id_created_utc", "owner_id", "created_utc"),
        # files gc asks which contents jobs name (the database store: see labapp.content_rows)
        Index("ix_import_job_sha256", "sha256"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    owner_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("app_user.id", ondelete="CASCADE"))
    eclass: Mapped[str] = mapped_column(String(32))
    filename: Mapped[str] = mapped_column(String(255))
    sha256: Mapped[str] = mapped_column(String(64))
    size: Mapped[int] = mapped_column(BigInteger)
    sheet: Mapped[str | None] = mapped_column(String(255))
    mapping: Mapped[dict[str, Any]] = mapped_column(JsonObject, default=dict)
    match: Mapped[str | None] = mapped_column(String(64))
    dry_run: Mapped[bool] = mapped_column(Boolean, default=True)
    status: Mapped[str] = mapped_column(String(16), default="queued")
    counts: Mapped[dict[str, Any]] = mapped_column(JsonObject, default=dict)
    progress_done: Mapped[int] = mapped_column(Integer, default=0)
    progress_total: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)
    # The process that claimed the job (labapp.liveness: role, host, pid and a random part).
    worker: Mapped[str | None] = mapped_column(String(160))
    upload: Mapped[str] = mapped_column(String(255))
    # The dry run this job commits (POST /api/import/{id}/commit): one commit per dry run.
    dry_run_id: Mapped[str | None] = mapped_column(
        String(32), ForeignKey("import_job.id", ondelete="SET NULL"), unique=True)
    created_utc: Mapped[datetime] = mapped_column(UtcDateTime)
    started_utc: Mapped[datetime | None] = mapped_column(UtcDateTime)
    finished_utc: Mapped[datetime | None] = mapped_column(UtcDateTime)


class ImportPending(Model):
    """An upload of the import wizard waiting for its mapping step, with the database store
    (``LABAPP_FILE_STORE=database``): its content is a content of that store (``sha256``),
    so the mapping step may be served by any host. ``token`` is the wizard's URL part;
    ``suffix`` is ``.csv`` or ``.xlsx``. The folder store keeps these as files instead."""

    __tablename__ = "import_pending"

    token: Mapped[str] = mapped_column(String(32), primary_key=True)
    owner_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("app_user.id", ondelete="CASCADE"))
    eclass: Mapped[str] = mapped_column(String(32))
    filename: Mapped[str] = mapped_column(String(255))
    sha256: Mapped[str] = mapped_column(String(64), index=True)
    size: Mapped[int] = mapped_column(BigInteger)
    suffix: Mapped[str] = mapped_column(String(8))
    created_utc: Mapped[datetime] = mapped_column(UtcDateTime)


class ImportRow(Model):
    """The outcome of one data row of a job's file (``row`` counts as the spreadsheet does:
    the header is row 1). ``errors`` lists ``{column, message}``."""

    __tablename__ = "import_row"
    __table_args__ = (
        CheckConstraint("outcome IN ('create', 'update', 'unchanged', 'error')",
                        name="outcome"),
        Index("ix_import_row_job_id_outcome_row", "job_id", "outcome", "row"),
    )

    job_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("import_job.id", ondelete="CASCADE"), primary_key=True)
    row: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    outcome: Mapped[str] = mapped_column(String(16))
    entity_id: Mapped[str | None] = mapped_column(String(64))
    errors: Mapped[list[Any]] = mapped_column(JsonObject, default=list)


class SavedMapping(Model):
    """A column mapping (``{column: field}``) one user saved for a class and a source name
    (the file name without dates and numbers, or a name the user chose)."""

    __tablename__ = "saved_mapping"
    __table_args__ = (UniqueConstraint("owner_id", "eclass", "source"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    owner_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("app_user.id", ondelete="CASCADE"))
    eclass: Mapped[str] = mapped_column(String(32))
    source: Mapped[str] = mapped_column(String(255))
    mapping: Mapped[dict[str, Any]] = mapped_column(JsonObject, default=dict)
    modified_utc: Mapped[datetime] = mapped_column(UtcDateTime)
