"""Restoring an export into a database whose schema is up to date.

Two passes over the file. The first checks everything and writes nothing: the format, every
table and column known to this model, the SHA-256 of each table section, of each blob's
content and of the whole file against the manifest. The second loads the rows in one
transaction (foreign keys checked at the end: deferred on SQLite, dropped and re-created on
PostgreSQL, since rows of a table may name rows that come later in it) and writes the file
contents to the blob store. Sequences are ordinary rows, so their counters come back as they
were; PostgreSQL's own counters of integer keys are moved past the loaded ids.
"""
from __future__ import annotations

import base64
import gzip
import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import JSON, Integer, Table, bindparam, delete, func, insert, inspect, select, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.engine.interfaces import ReflectedForeignKeyConstraint

from labapp.auth import second_factor
from labapp.blobs import restoring
from labapp.exports.archive import FORMAT, VERSION, ArchiveError, decoder, read_lines
from labapp.exports.service import BATCH, exported_tables, present_columns

Progress = Callable[[int], None]


class RestoreRefused(Exception):
    """The database is not empty and replacing its content was not asked for."""


@dataclass
class Checked:
    """What the first pass found: the manifest and the number of lines to load."""

    manifest: dict[str, Any]
    lines: int
    rows: dict[str, int] = field(default_factory=dict)
    columns: dict[str, list[str]] = field(default_factory=dict)


def _open(path: Path) -> Any:
    return gzip.open(path, "rb")


def verify(path: Path, tables: dict[str, Table]) -> Checked:
    """Check the whole export; ArchiveError naming the first problem. Writes nothing."""
    whole = hashlib.sha256()
    sections: dict[str, tuple[int, Any]] = {}
    blobs: dict[str, int] = {}
    manifest: dict[str, Any] | None = None
    current: str | None = None
    blob: tuple[str, Any, int] | None = None
    lines = 0
    columns: dict[str, list[str]] = {}
    with _open(path) as stream:
        for line, value in _checked_lines(stream):
            lines += 1
            if manifest is not None:
                raise ArchiveError("data after the manifest")
            if lines == 1:
                if not isinstance(value, dict) or value.get("format") != FORMAT:
                    raise ArchiveError("not a labapp export")
                if value.get("version") != VERSION:
                    raise ArchiveError(f"export format version {value.get('version')} is "
                                       f"not supported (expected {VERSION})")
            elif value is _ROW:
                if current is None:
                    raise ArchiveError(f"line {lines}: a row outside a table")
                count, digest = sections[current]
                digest.update(line)
                sections[current] = (count + 1, digest)
            elif isinstance(value, str):
                if blob is None:
                    raise ArchiveError(f"line {lines}: content outside a blob")
                chunk = base64.b64decode(value)
                blob[1].update(chunk)
                blob = (blob[0], blob[1], blob[2] + len(chunk))
            elif isinstance(value, dict) and "manifest" in value:
                manifest = value["manifest"]
            elif isinstance(value, dict) and "table" in value:
                _close_blob(blob, blobs)
                current, blob = value["table"], None
                _check_table(value, tables)
                columns[current] = list(value.get("columns", []))
                sections[current] = (0, hashlib.sha256())
            elif isinstance(value, dict) and "blob" in value:
                _close_blob(blob, blobs)
                current, blob = None, (value["blob"], hashlib.sha256(), 0)
            else:
                raise ArchiveError(f"line {lines}: not a line of an export")
            if manifest is None:
                whole.update(line)
    _close_blob(blob, blobs)
    if manifest is None:
        raise ArchiveError("the export has no manifest (it is incomplete)")
    _compare(manifest, whole.hexdigest(), sections, blobs)
    return Checked(manifest=manifest, lines=lines,
                   rows={name: count for name, (count, _) in sections.items()},
                   columns=columns)


_ROW = object()


def _checked_lines(stream: Any) -> Iterator[tuple[bytes, Any]]:
    """Like :func:`read_lines`, but a row line is not parsed (its checksum covers it): it
    comes as :data:`_ROW`."""
    try:
        for number, line in enumerate(stream, start=1):
            if line[:1] == b"[":
                yield line, _ROW
                continue
            try:
                yield line, json.loads(line)
            except ValueError:
                raise ArchiveError(f"line {number} is not JSON") from None
    except (OSError, EOFError) as error:
        raise ArchiveError(f"the file cannot be read: {error}") from None


def _close_blob(blob: tuple[str, Any, int] | None, blobs: dict[str, int]) -> None:
    if blob is not None:
        sha256, digest, size = blob
        if digest.hexdigest() != sha256:
            raise ArchiveError(f"the content of blob {sha256} does not match its SHA-256")
        blobs[sha256] = size


# What an operator does when the export holds lab-defined classes or fields this installation
# does not have (yet): the model comes from the extension files, the tables from a sync.
EXTENSIONS_FIRST = ("copy the lab's data-model extension files into this instance's "
                    "datamodel/ folder, run `flask --app labapp sync`, then restore with "
                    "--force")


def _check_table(value: dict[str, Any], tables: dict[str, Table]) -> None:
    table = tables.get(value["table"])
    if table is None:
        raise ArchiveError(f"table {value['table']!r} is not part of this data model: "
                           f"{EXTENSIONS_FIRST}")
    unknown = [name for name in value.get("columns", []) if name not in table.c]
    if unknown:
        raise ArchiveError(f"table {table.name!r} has no columns {unknown} in this data "
                           f"model: {EXTENSIONS_FIRST}")


def _require_schema(checked: Checked, present: dict[str, list[Any]]) -> None:
    """RestoreRefused unless the database has every table and column the export fills."""
    for name, wanted in checked.columns.items():
        have = {column.name for column in present.get(name, [])}
        missing = [column for column in wanted if column not in have]
        if name not in present or missing:
            what = f"table {name!r}" if name not in present else f"columns {missing} of {name!r}"
            raise RestoreRefused(f"The database has no {what} yet: {EXTENSIONS_FIRST}.")


def _compare(manifest: dict[str, Any], whole: str, sections: dict[str, tuple[int, Any]],
             blobs: dict[str, int]) -> None:
    expected = manifest.get("tables", {})
    if set(expected) != set(sections):
        raise ArchiveError("the tables of the export do not match its manifest")
    for name, (count, digest) in sections.items():
        if expected[name] != {"rows": count, "sha256": digest.hexdigest()}:
            raise ArchiveError(f"the checksum of table {name!r} does not match the manifest")
    if manifest.get("blobs", {}) != blobs:
        raise ArchiveError("the file contents of the export do not match its manifest")
    if manifest.get("sha256") != whole:
        raise ArchiveError("the SHA-256 of the export does not match its manifest")


def occupied(connection: Connection, tables: list[Table]) -> dict[str, int]:
    """The exported tables that hold rows, with their counts."""
    counts = {table.name: connection.scalar(select(func.count()).select_from(table))
              for table in tables}
    return {name: count for name, count in counts.items() if count}


def restore(engine: Engine, path: Path, *, force: bool = False,
            progress: Progress | None = None, checked: Checked | None = None) -> Checked:
    """Load the export at ``path``. ArchiveError when it fails its checks; RestoreRefused
    when the database holds data and ``force`` is not set (with ``force`` that data is
    replaced). Nothing is written unless everything loads. ``checked``: the result of
    :func:`verify` when the caller has already run it."""
    checked = checked or verify(path, {table.name: table for table in exported_tables()})
    report = progress or (lambda lines: None)
    with engine.connect() as connection, connection.begin():
        present = present_columns(connection, exported_tables())
        _require_schema(checked, present)
        tables = [table for table in exported_tables() if table.name in present]
        by_name = {table.name: table for table in tables}
        held = occupied(connection, tables)
        if held and not force:
            listed = ", ".join(f"{name} ({count})" for name, count in sorted(held.items()))
            raise RestoreRefused(f"The database is not empty: {listed}. Restore into an "
                                 "empty database, or pass --force to replace its data.")
        with _foreign_keys_deferred(connection, tables):
            for table in reversed(tables):
                connection.execute(delete(table))
            _load(connection, path, by_name, report)
        _move_key_counters(connection, tables)
        if "second_factor" in by_name:
            second_factor.seal_under_current_key(connection)
    return checked


class _Lines:
    """The decoded lines of an export, with one line of look-ahead."""

    def __init__(self, source: Iterator[tuple[bytes, Any]], report: Progress) -> None:
        self.source = source
        self.report = report
        self.unreported = 0
        self.back: list[Any] = []

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> Any:
        if self.back:
            return self.back.pop()
        try:
            value = next(self.source)[1]
        except StopIteration:
            self.report(self.unreported)
            raise
        self.unreported += 1
        if self.unreported >= BATCH:
            self.report(self.unreported)
            self.unreported = 0
        return value

    def following(self, kind: type) -> Iterator[Any]:
        """The lines of type ``kind`` that come next (the first other line stays)."""
        for value in self:
            if not isinstance(value, kind):
                self.back.append(value)
                return
            yield value


class _BlobStream:
    """The bytes of a blob's base64 lines, read as a stream by the blob store."""

    def __init__(self, chunks: Iterator[str]) -> None:
        self.chunks = chunks

    def read(self, _size: int = -1) -> bytes:
        for chunk in self.chunks:
            return base64.b64decode(chunk)
        return b""


def _load(connection: Connection, path: Path, tables: dict[str, Table],
          report: Progress) -> None:
    with _open(path) as stream:
        lines = _Lines(read_lines(stream), report)
        for value in lines:
            if isinstance(value, dict) and "table" in value:
                table, columns = tables[value["table"]], value["columns"]
                _load_rows(connection, table, columns, lines.following(list))
            elif isinstance(value, dict) and "blob" in value:
                with restoring(connection, _BlobStream(lines.following(str))) as blob:
                    if blob.sha256 != value["blob"]:
                        raise ArchiveError(f"blob {value['blob']} changed while restoring")


def _load_rows(connection: Connection, table: Table, columns: list[str],
               rows: Iterator[list[Any]]) -> None:
    """INSERT the rows of one table in batches of :data:`BATCH`."""
    statement = _insert(table, columns)
    converters = [(f"v_{name}", decoder(table.c[name])) for name in columns]
    batch: list[dict[str, Any]] = []
    for row in rows:
        batch.append({key: item if convert is None or item is None else convert(item)
                      for (key, convert), item in zip(converters, row, strict=True)})
        if len(batch) >= BATCH:
            connection.execute(statement, batch)
            batch = []
    if batch:
        connection.execute(statement, batch)


def _insert(table: Table, columns: list[str]) -> Any:
    """An INSERT of ``columns`` whose JSON values keep SQL NULL apart from JSON null."""
    values = {}
    for name in columns:
        column = table.c[name]
        type_ = column.type
        if isinstance(type_, JSON):
            type_ = JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")
        values[name] = bindparam(f"v_{name}", type_=type_)
    return insert(table).values(values)


class _foreign_keys_deferred:
    """Foreign keys checked once the load is complete, on both databases."""

    def __init__(self, connection: Connection, tables: list[Table]) -> None:
        self.connection = connection
        self.tables = tables
        self.dropped: list[tuple[str, str, ReflectedForeignKeyConstraint]] = []

    def __enter__(self) -> None:
        if self.connection.dialect.name == "sqlite":
            self.connection.exec_driver_sql("PRAGMA defer_foreign_keys = ON")
            return
        inspector = inspect(self.connection)
        quote = self.connection.dialect.identifier_preparer.quote
        for table in self.tables:
            for key in inspector.get_foreign_keys(table.name):
                name = key["name"]
                if name is None:  # PostgreSQL names every constraint
                    raise ArchiveError(f"a foreign key of {table.name} has no name")
                self.dropped.append((table.name, name, key))
                self.connection.execute(text(
                    f"ALTER TABLE {quote(table.name)} DROP CONSTRAINT {quote(name)}"))

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        if kind is not None:
            return
        quote = self.connection.dialect.identifier_preparer.quote
        for table_name, name, key in self.dropped:
            columns = ", ".join(quote(name) for name in key["constrained_columns"])
            referred = ", ".join(quote(name) for name in key["referred_columns"])
            options = key.get("options", {})
            tail = "".join(f" {clause} {options[option]}" for option, clause in (
                ("ondelete", "ON DELETE"), ("onupdate", "ON UPDATE")) if options.get(option))
            if options.get("deferrable"):
                tail += f" DEFERRABLE INITIALLY {options.get('initially') or 'IMMEDIATE'}"
            self.connection.execute(text(
                f"ALTER TABLE {quote(table_name)} ADD CONSTRAINT {quote(name)} "
                f"FOREIGN KEY ({columns}) REFERENCES {quote(key['referred_table'])} "
                f"({referred}){tail}"))


def _move_key_counters(connection: Connection, tables: list[Table]) -> None:
    """PostgreSQL: each integer key's own counter continues after the largest loaded id."""
    if connection.dialect.name != "postgresql":
        return
    for table in tables:
        keys = list(table.primary_key.columns)
        if len(keys) != 1 or not isinstance(keys[0].type, Integer):
            continue
        sequence = connection.scalar(text("SELECT pg_get_serial_sequence(:t, :c)"),
                                     {"t": table.name, "c": keys[0].name})
        if sequence is None:
            continue
        top = connection.scalar(select(func.max(keys[0])))
        connection.execute(text("SELECT setval(:s, :v, :called)"),
                           {"s": sequence, "v": top or 1, "called": top is not None})
