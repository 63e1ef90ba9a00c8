"""Exports: one consistent snapshot of the data written to the instance's ``sync/`` folder.

The snapshot is one read transaction on a connection of its own (PostgreSQL: REPEATABLE READ,
read only; SQLite: one ``BEGIN``, a WAL snapshot), so an export never mixes data from before
and after a concurrent change. Every table of the current data model (lab-defined classes
and fields included) that the database holds is read, in dependency order, rows
streamed in batches (a server-side cursor on PostgreSQL), so memory does not grow with the
data. The file is written under a temporary name and renamed when complete: a half-written
export is never listed.
"""
from __future__ import annotations

import gzip
import json
import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Column, ColumnElement, String, Table, func, inspect, select
from sqlalchemy.engine import Connection, Engine

from labapp.atomic import write_whole
from labapp.blobs import StoredContent
from labapp.datamodel.schema import expected_columns, expected_tables
from labapp.db import db
from labapp.errors import NotFound
from labapp.exports.archive import NAME, PREFIX, SIDECAR, SUFFIX, Writer, encode_value

FOLDER = "sync"
BATCH = 2000
ENTITY_TABLE = "entity"
FILE_TABLE = "file"
# Login state: sessions, their refresh tokens and failed-login counters belong to the running
# installation, not to the lab's data (docs/decisions/export-contents.md). The search queue is
# derived state: restoring the rows queues every entity again (its triggers), so the restored
# installation's index is built from what it holds. The entity tallies and the location
# counts are derived too: the restored entities' and items' triggers count them again. The
# contents of the database store are in the export as its blobs, as the folder store's are.
# The change log belongs to the installation that made the changes: a restore's deletes and
# inserts are changes of its own, numbered after everything its followers have seen.
NOT_EXPORTED = frozenset({"login_session", "refresh_token", "login_failure", "search_queue",
                          "change_log", "change_log_pending", "change_log_horizon",
                          "file_content", "file_content_chunk", "entity_count",
                          "entity_count_change", "location_count", "location_count_change"})

Progress = Callable[[int, int], None]
ContentOf = Callable[[str, Connection], StoredContent | None]


@dataclass(frozen=True)
class ExportResult:
    """What ``POST /api/sync/save`` answers."""

    filename: str
    entities: int
    bytes: int


@dataclass(frozen=True)
class ExportInfo:
    """One export of the folder, as listed."""

    name: str
    size: int
    created: str
    entities: int


def export_folder(instance_path: str | Path) -> Path:
    """The instance's ``sync/`` folder (created when missing)."""
    folder = Path(instance_path) / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def exported_tables() -> list[Table]:
    """Every table of the current data model an export holds, parents before children: the
    code's, then those of the lab-defined classes (extensions)."""
    current = {table.name for table in expected_tables()}
    ordered = [*db.metadata.sorted_tables,
               *(table for table in expected_tables() if table.name not in db.metadata.tables)]
    return [table for table in ordered if table.name in current
            and table.name not in NOT_EXPORTED]


def exported_columns(table: Table) -> list[Column[Any]]:
    """The columns of ``table`` in the current data model, extension fields included (a
    field a later model dropped stays mapped in a running process, and is left out), but
    not the numbers a database keeps of its own (``info={"local": True}``: a user's
    ``actor_version``, which the database renews when the row is restored)."""
    return [column for column in expected_columns(table) if not column.info.get("local")]


def present_columns(connection: Connection, tables: list[Table]) -> dict[str, list[Column[Any]]]:
    """The exported columns each of ``tables`` really has in the connected database (a table
    or column the model declares but no sync has created yet holds no data to export)."""
    inspector = inspect(connection)
    held = set(inspector.get_table_names())
    present = {}
    for table in tables:
        if table.name in held:
            names = {column["name"] for column in inspector.get_columns(table.name)}
            present[table.name] = [column for column in exported_columns(table)
                                   if column.name in names]
    return present


@contextmanager
def snapshot(engine: Engine) -> Iterator[Connection]:
    """A connection inside one read transaction that sees one state of the database."""
    with engine.connect() as connection:
        if engine.dialect.name == "postgresql":
            connection = connection.execution_options(isolation_level="REPEATABLE READ",
                                                      postgresql_readonly=True)
        with connection.begin():
            yield connection


def _ordered(table: Table, columns: list[Column[Any]], dialect: str) -> Any:
    """The ``columns`` of the table's rows in primary-key byte order, the same on both
    databases."""
    keys: list[ColumnElement[Any]] = []
    for column in table.primary_key.columns or columns:
        if dialect == "postgresql" and isinstance(column.type, String):
            keys.append(column.collate("C"))
        else:
            keys.append(column)
    return select(*columns).order_by(*keys)


def stream_rows(connection: Connection, table: Table,
                columns: list[Column[Any]]) -> Iterator[tuple[Any, ...]]:
    """The ``columns`` of the rows of ``table`` in batches of :data:`BATCH` (never all in
    memory)."""
    statement = _ordered(table, columns, connection.dialect.name)
    result = connection.execution_options(yield_per=BATCH).execute(statement)
    for row in result:
        yield tuple(row)


def _export_name(now: datetime) -> str:
    return f"{PREFIX}{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}{SUFFIX}"


def _write_json(path: Path, value: Any) -> None:
    write_whole(path, json.dumps(value, indent=1))


def save_export(engine: Engine, instance_path: str | Path, blob_of: ContentOf,
                progress: Progress | None = None) -> ExportResult:
    """Write one export of everything to the ``sync/`` folder and return its summary.

    ``blob_of(sha256, connection)`` finds the stored content of a digest, read on the
    snapshot's connection in the database store (None when missing: the export lists it
    under ``missingBlobs``); ``progress(done, total)`` is told of every batch of rows and
    every blob. On any error the partial file is removed and nothing is listed.
    """
    now = datetime.now(UTC).replace(microsecond=0)
    folder = export_folder(instance_path)
    name = _export_name(now)
    partial = folder / f".{name}.partial"
    try:
        manifest = _write_snapshot(engine, partial, now, blob_of, progress or _silent)
        size = partial.stat().st_size
        _write_json(folder / (name + SIDECAR), {**manifest, "bytes": size})
        os.replace(partial, folder / name)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return ExportResult(filename=name, entities=manifest["entities"], bytes=size)


def _silent(done: int, total: int) -> None:
    """No progress report."""


def _write_snapshot(engine: Engine, path: Path, now: datetime,
                    blob_of: ContentOf, progress: Progress) -> dict[str, Any]:
    digests: set[str] = set()
    with snapshot(engine) as connection, gzip.open(path, "wb", compresslevel=6) as stream:
        present = present_columns(connection, exported_tables())
        tables = [table for table in exported_tables() if table.name in present]
        counts = {table.name: connection.scalar(select(func.count()).select_from(table))
                  for table in tables}
        total = sum(count or 0 for count in counts.values())
        done = 0
        progress(done, total)
        writer = Writer(stream, {"createdUtc": now.isoformat(),
                                 "source": engine.dialect.name})
        for table in tables:
            names = [column.name for column in present[table.name]]
            digest_at = names.index("sha256") if table.name == FILE_TABLE else None
            writer.begin_table(table.name, names)
            for row in stream_rows(connection, table, present[table.name]):
                writer.row([encode_value(value) for value in row])
                if digest_at is not None and row[digest_at]:
                    digests.add(row[digest_at])
                done += 1
                if done % BATCH == 0:
                    progress(done, total + len(digests))
        # The content is read while the snapshot still holds: a blob a File of the snapshot
        # names cannot be collected meanwhile (files gc keeps referenced blobs), and the
        # database store's rows are read in the snapshot itself.
        missing = []
        total += len(digests)
        for sha256 in sorted(digests):
            content = blob_of(sha256, connection)
            if content is None:
                missing.append(sha256)
            else:
                writer.blob(sha256, content)
            done += 1
            progress(done, total)
        manifest = writer.finish({"createdUtc": now.isoformat(),
                                  "source": engine.dialect.name,
                                  "entities": counts.get(ENTITY_TABLE, 0),
                                  "missingBlobs": missing})
    progress(total, total)
    return manifest


def list_exports(instance_path: str | Path) -> list[ExportInfo]:
    """The complete exports of the folder, newest first."""
    folder = export_folder(instance_path)
    found = []
    for path in folder.iterdir():
        sidecar = path.with_name(path.name + SIDECAR)
        if not NAME.fullmatch(path.name) or not sidecar.is_file():
            continue
        try:
            manifest = json.loads(sidecar.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        found.append(ExportInfo(name=path.name, size=path.stat().st_size,
                                created=manifest.get("createdUtc", ""),
                                entities=manifest.get("entities", 0)))
    return sorted(found, key=lambda info: (info.created, info.name), reverse=True)


def export_path(instance_path: str | Path, name: str) -> Path:
    """The file of the export ``name``; NotFound for anything that is not a complete export
    of the folder (another name, a path, a partial file)."""
    if not NAME.fullmatch(name):
        raise NotFound(f"There is no export named {name!r}.", code="export_not_found")
    path = export_folder(instance_path) / name
    if not path.is_file() or not path.with_name(name + SIDECAR).is_file():
        raise NotFound(f"There is no export named {name!r}.", code="export_not_found")
    return path

