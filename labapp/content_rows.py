"""The database content store (``LABAPP_FILE_STORE=database``): contents as rows of PostgreSQL.

Rows
    ``file_content`` names each content once by its SHA-256 (its size, when it was stored and
    a number, ``content_id``); ``file_content_chunk`` holds its bytes in pieces of
    :data:`CHUNK` bytes, every piece but the last full, so byte ``n`` lives in piece
    ``n // CHUNK`` (a Range request reads only the pieces it needs).

Writing
    Content is streamed in piece by piece *inside the caller's transaction*, under a
    ``content_id`` drawn from a sequence, hashing on the way; the ``file_content`` row comes
    last, once the digest is known. So the content and the File naming it commit together:
    an upload that fails halfway (an interrupted stream, a rejected File) rolls back and
    leaves nothing behind, and a committed ``file_content`` row always has all its pieces.
    No pins, no lock file: the transaction is the unit of work.

Storing each content once
    When the digest is stored already (``INSERT … ON CONFLICT DO NOTHING`` inserts nothing;
    it waits for a writer of the same digest that has not committed yet), the writer locks
    the existing row ``FOR KEY SHARE`` until its transaction ends and deletes its own pieces.
    The collector locks the rows it may remove ``FOR UPDATE SKIP LOCKED`` and only then
    reads which digests committed Files name, in a statement of its own (READ COMMITTED: a
    new snapshot): a row some writer holds is skipped, and a writer that comes later waits
    for the collector and, finding the row gone, inserts its own.

Reading
    :class:`ChunkReader` is a seekable binary file over the pieces, reading one piece (or the
    part of it asked for) per query, so neither a download nor an export holds a content
    whole in memory.
"""
from __future__ import annotations

import hashlib
import io
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from typing import Protocol

from sqlalchemy import delete, exists, func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.engine import Connection

from labapp.db import table_of
from labapp.model import File, FileContent, FileContentChunk, ImportJob, ImportPending
from labapp.model.content import CONTENT_ID_SEQUENCE

CHUNK = 1024 * 1024
# What a reader fetches per query at most when read sequentially (a download).
READ_BUFFER = 256 * 1024

_contents = table_of(FileContent)
_chunks = table_of(FileContentChunk)
_file_digests = table_of(File).c.sha256
_import_digests = table_of(ImportJob).c.sha256
_pending_digests = table_of(ImportPending).c.sha256

Connect = Callable[[], AbstractContextManager[Connection]]


class Readable(Protocol):
    """What the store reads content from: a binary file, an upload, a decoding stream."""

    def read(self, size: int = -1, /) -> bytes:
        """Up to ``size`` bytes; empty at the end."""
        ...


def _pieces(stream: Readable) -> Iterator[bytes]:
    """The stream's bytes in pieces of exactly :data:`CHUNK` bytes (the last one shorter),
    whatever sizes its reads return; never more than two pieces in memory."""
    pending = bytearray()
    while block := stream.read(CHUNK):
        pending += block
        while len(pending) >= CHUNK:
            yield bytes(pending[:CHUNK])
            del pending[:CHUNK]
    if pending:
        yield bytes(pending)


def write(connection: Connection, stream: Readable) -> tuple[str, int]:
    """Store the stream's content in the connection's current transaction; returns its
    SHA-256 hex digest and size. The content is kept only if that transaction commits."""
    content_id = connection.scalar(select(func.nextval(CONTENT_ID_SEQUENCE)))
    digest = hashlib.sha256()
    size = 0
    for seq, piece in enumerate(_pieces(stream)):
        digest.update(piece)
        size += len(piece)
        connection.execute(_chunks.insert(),
                           {"content_id": content_id, "seq": seq, "data": piece})
    sha256 = digest.hexdigest()
    row = {"sha256": sha256, "content_id": content_id, "size": size,
           "stored_utc": datetime.now(UTC)}
    while True:
        inserted = connection.scalar(pg_insert(_contents).values(row)
                                     .on_conflict_do_nothing(index_elements=["sha256"])
                                     .returning(_contents.c.content_id))
        if inserted is not None:
            return sha256, size
        # Stored already: hold that row against the collector, then drop our own copy. Gone
        # meanwhile (collected): insert ours after all.
        held = connection.scalar(select(_contents.c.content_id)
                                 .where(_contents.c.sha256 == sha256)
                                 .with_for_update(read=True, key_share=True))
        if held is not None:
            connection.execute(delete(_chunks).where(_chunks.c.content_id == content_id))
            return sha256, size


def hold(connection: Connection, sha256: str) -> bool:
    """Lock the content with this digest against the collector until the connection's
    transaction ends (``FOR KEY SHARE``, as a second writer does); whether it is stored."""
    return connection.scalar(select(_contents.c.content_id)
                             .where(_contents.c.sha256 == sha256)
                             .with_for_update(read=True, key_share=True)) is not None


def find(connection: Connection, sha256: str) -> tuple[int, int] | None:
    """The ``content_id`` and size of the content with this digest, or None."""
    row = connection.execute(select(_contents.c.content_id, _contents.c.size)
                             .where(_contents.c.sha256 == sha256)).first()
    return None if row is None else (row.content_id, row.size)


class ChunkReader(io.RawIOBase):
    """A content of the store as a seekable binary file: each read is one query for (part
    of) one piece, on a connection that ``connect`` lends for that query alone."""

    def __init__(self, connect: Connect, content_id: int, size: int) -> None:
        super().__init__()
        self._connect = connect
        self._content_id = content_id
        self.size = size
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self.size}[whence]
        if base + offset < 0:
            raise ValueError("negative seek position")
        self._position = base + offset
        return self._position

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        """Fill ``buffer`` from the current position with the bytes of one piece at most;
        0 at the end. OSError when the piece is gone (the content was removed)."""
        if self._position >= self.size or not len(buffer):
            return 0
        seq, offset = divmod(self._position, CHUNK)
        wanted = min(len(buffer), CHUNK - offset, self.size - self._position)
        with self._connect() as connection:
            data = connection.scalar(
                select(func.substring(_chunks.c.data, offset + 1, wanted))
                .where(_chunks.c.content_id == self._content_id, _chunks.c.seq == seq))
        if not data:
            raise OSError(f"piece {seq} of stored content {self._content_id} is missing")
        count = len(data)
        memoryview(buffer)[:count] = data
        self._position += count
        return count


def open_reader(connect: Connect, content_id: int, size: int) -> io.BufferedReader:
    """A buffered, seekable binary file over a content (see :class:`ChunkReader`)."""
    return io.BufferedReader(ChunkReader(connect, content_id, size), READ_BUFFER)


# --- garbage collection (flask --app labapp files gc) -------------------------------------

def stored_digests(connection: Connection) -> list[str]:
    """The digest of every content of the store, in order."""
    return list(connection.scalars(select(_contents.c.sha256).order_by(_contents.c.sha256)))


def collect_garbage(connection: Connection, digests: Sequence[str], grace_seconds: float, *,
                    dry_run: bool) -> list[tuple[str, int]]:
    """Remove the contents among ``digests`` that no committed File or import names,
    that no writer holds and that were stored at least ``grace_seconds`` ago; returns their
    digests and sizes (found, not removed, with ``dry_run``). Runs in the connection's
    transaction, which the caller commits: give a few hundred digests at a time."""
    if not digests:
        return []
    oldest = datetime.now(UTC) - timedelta(seconds=grace_seconds)
    candidates = connection.execute(
        select(_contents.c.sha256, _contents.c.size, _contents.c.content_id)
        .where(_contents.c.sha256.in_(sorted(digests)), _contents.c.stored_utc <= oldest)
        .order_by(_contents.c.sha256)
        .with_for_update(skip_locked=True)).all()
    referenced = _referenced(connection, [row.sha256 for row in candidates])
    garbage = [row for row in candidates if row.sha256 not in referenced]
    if garbage and not dry_run:
        connection.execute(delete(_chunks).where(
            _chunks.c.content_id.in_([row.content_id for row in garbage])))
        connection.execute(delete(_contents).where(
            _contents.c.sha256.in_([row.sha256 for row in garbage])))
    return [(row.sha256, row.size) for row in garbage]


def _referenced(connection: Connection, digests: Collection[str]) -> set[str]:
    """The digests among ``digests`` that a committed File, import job or pending wizard
    upload names (import uploads are contents of this store too: see
    :mod:`labapp.imports.uploads`); a statement of its own: under READ COMMITTED it sees
    every commit made before it began."""
    if not digests:
        return set()
    wanted = sorted(digests)
    return set(connection.scalars(
        select(_file_digests).where(_file_digests.in_(wanted))
        .union(select(_import_digests).where(_import_digests.in_(wanted)),
               select(_pending_digests).where(_pending_digests.in_(wanted)))))


def remove_stray_chunks(connection: Connection, *, dry_run: bool) -> int:
    """Remove committed pieces no content names (none should exist: a content and its
    pieces commit together; a writer's own pieces are invisible until it commits); returns
    how many (counted only, with ``dry_run``)."""
    stray = ~exists().where(_contents.c.content_id == _chunks.c.content_id)
    if dry_run:
        return connection.scalar(select(func.count()).select_from(_chunks).where(stray)) or 0
    return connection.execute(delete(_chunks).where(stray)).rowcount
