"""The export format: gzip-compressed JSON lines with a trailing manifest of checksums.

One export is one file ``labapp-export-<UTC time>-<random>.jsonl.gz``. Each line is one JSON
value (docs/export-format.md):

- first, the header ``{"format": "labapp-export", "version": 1, "createdUtc", "source"}``;
- per table, in dependency order: ``{"table": name, "columns": [...]}``, then one JSON
  array per row (values in the order of ``columns``);
- per stored file content: ``{"blob": sha256, "size": n}``, then its bytes as base64 JSON
  strings of at most :data:`CHUNK` bytes each;
- last, ``{"manifest": {...}}``: rows and SHA-256 of every table section, the blobs, the
  entity count and the SHA-256 of every byte before the manifest line.

A sidecar ``<name>.manifest.json`` repeats the manifest so the list of exports never has to
decompress them. Values are encoded by column type (timestamps and dates as ISO 8601,
decimals as strings, binary as base64) and decoded by the column type of the database
they are loaded into.
"""
from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable, Iterator
from datetime import date, datetime
from decimal import Decimal
from typing import IO, Any, Protocol

from sqlalchemy import Column

from labapp.blobs import StoredContent

FORMAT = "labapp-export"
VERSION = 1
CHUNK = 48 * 1024
PREFIX = "labapp-export-"
SUFFIX = ".jsonl.gz"
SIDECAR = ".manifest.json"
NAME = re.compile(r"labapp-export-\d{8}T\d{6}Z-[0-9a-f]{6}\.jsonl\.gz")


class ArchiveError(ValueError):
    """The file is not a sound export: unreadable, not our format, or a checksum differs."""


def encode_value(value: Any) -> Any:
    """A column value as JSON."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    return value


def _python_type(column: Column[Any]) -> type | None:
    """The Python type a column's values have (a decorated type's underlying one)."""
    type_ = column.type
    type_ = getattr(type_, "impl_instance", type_)
    try:
        return type_.python_type
    except NotImplementedError:
        return None


class Writable(Protocol):
    """Where an export's lines go: a binary file, a gzip stream."""

    def write(self, data: bytes, /) -> int:
        """Write ``data``; how many bytes were written."""
        ...


_DECODERS: dict[type, Callable[[Any], Any]] = {
    datetime: datetime.fromisoformat, date: date.fromisoformat, Decimal: Decimal,
    bytes: base64.b64decode}


def decoder(column: Column[Any]) -> Callable[[Any], Any] | None:
    """How a JSON value of ``column`` becomes what it binds (None: as it is)."""
    python_type = _python_type(column)
    return None if python_type is None else _DECODERS.get(python_type)


def decode_value(column: Column[Any], value: Any) -> Any:
    """A JSON value back as what ``column`` binds."""
    convert = decoder(column)
    return value if value is None or convert is None else convert(value)


def dumps(value: Any) -> bytes:
    """One line of the file (compact, keys in a fixed order, non-ASCII kept)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"),
                      sort_keys=True, allow_nan=False).encode() + b"\n"


class Writer:
    """Writes the lines of one export to a binary stream, keeping the checksums."""

    def __init__(self, stream: Writable, header: dict[str, Any]) -> None:
        self.stream = stream
        self.whole = hashlib.sha256()
        self.tables: dict[str, dict[str, Any]] = {}
        self.blobs: dict[str, int] = {}
        self._section: Any = None  # the running SHA-256 of the current table
        self._rows = 0
        self._table: str | None = None
        self._write(dumps({"format": FORMAT, "version": VERSION, **header}))

    def _write(self, line: bytes) -> None:
        self.whole.update(line)
        self.stream.write(line)

    def _close_section(self) -> None:
        if self._table is not None:
            self.tables[self._table] = {"rows": self._rows,
                                        "sha256": self._section.hexdigest()}
        self._table, self._section, self._rows = None, None, 0

    def begin_table(self, name: str, columns: list[str]) -> None:
        """Start the section of ``name``."""
        self._close_section()
        self._write(dumps({"table": name, "columns": columns}))
        self._table, self._section = name, hashlib.sha256()

    def row(self, values: list[Any]) -> None:
        """One row of the current table (values already encoded)."""
        line = dumps(values)
        self._section.update(line)
        self._rows += 1
        self._write(line)

    def blob(self, sha256: str, stored: StoredContent) -> int:
        """The content of one stored file, read in chunks; returns its size. ArchiveError
        when the stored bytes no longer match their digest."""
        self._close_section()
        size = stored.size
        self._write(dumps({"blob": sha256, "size": size}))
        digest = hashlib.sha256()
        with stored.open() as content:
            while chunk := content.read(CHUNK):
                digest.update(chunk)
                self._write(dumps(base64.b64encode(chunk).decode("ascii")))
        if digest.hexdigest() != sha256:
            raise ArchiveError(f"the stored content {sha256} does not match its digest")
        self.blobs[sha256] = size
        return size

    def finish(self, extra: dict[str, Any]) -> dict[str, Any]:
        """Write the manifest line and return the manifest."""
        self._close_section()
        manifest = {**extra, "tables": self.tables, "blobs": self.blobs,
                    "sha256": self.whole.hexdigest()}
        self.stream.write(dumps({"manifest": manifest}))
        return manifest


def read_lines(stream: IO[bytes]) -> Iterator[tuple[bytes, Any]]:
    """Each line of an export with its decoded value; ArchiveError when it does not parse."""
    try:
        for number, line in enumerate(stream, start=1):
            try:
                yield line, json.loads(line)
            except ValueError:
                raise ArchiveError(f"line {number} is not JSON") from None
    except (OSError, EOFError) as error:
        raise ArchiveError(f"the file cannot be read: {error}") from None
