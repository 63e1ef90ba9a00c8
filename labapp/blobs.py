"""The content store: each content stored once, as ``instance/files/ab/cd/<sha256>``.

Writing
    Content is written to a temporary file in the store (``.upload-*``), hashed on the way
    and renamed into place, so a reader never sees half a file and two writers of the same
    content cannot corrupt it. Content is read in chunks, never whole.

Units of work and pins
    A File row and its content must agree both ways: a rejected upload or batch leaves no
    content behind, and content a committed File names is never lost. The store is
    content-addressed, so one blob may serve several writers at once, some of which commit
    and some roll back. Each writer therefore *pins* what it stores until its unit of work
    ends: a hard link ``.pins/<sha256>.<token>`` to the blob, ``token`` naming the unit. When
    the unit ends:

    - committed: a blob that vanished meanwhile is linked back from the pin (nothing in this
      protocol removes a pinned blob, but the pin holds the bytes regardless); the pin goes;
    - rolled back: the pin goes, and so does the blob, unless a committed File names its
      digest or another unit still pins it.

    Storing and pinning, ending a unit and collecting garbage each happen under one lock, an
    ``fcntl.flock`` on ``.lock`` in the store, so they never interleave between processes
    (or hosts sharing the store, where the file system supports ``flock``). Writing the
    content, the slow part, happens before the lock is taken. A rolled-back writer reads the
    File rows in a transaction begun under the lock: every writer that committed has either
    dropped its pin before, so its commit is seen, or still holds it.

Two paths write content
    - ``POST /api/file`` and the entity page's upload store the stream *before* the database
      transaction (:func:`staged`), so an SQLite write lock is never held during a 100 MB
      disk write; their unit ends with the ``with`` block around the transaction.
    - The entity batch's ``files`` property stores base64 content *inside* the transaction
      (:func:`store_in_transaction`); its unit ends with the transaction, through
      :func:`labapp.db.after_commit` and :func:`labapp.db.after_rollback`.

Stale pins and garbage
    A unit holds an exclusive ``flock`` on ``.pins/<token>.owner`` while it lives, and the
    operating system drops that lock when the process dies. ``flask --app labapp files gc``
    (:mod:`labapp.files.cli`) removes the pins of owners whose lock it can take, partial
    uploads and blobs no File names, older than a grace period and pinned by no live unit.

Two stores
    All of the above is the folder store (``LABAPP_FILE_STORE=folder``, the default; its
    folder is ``LABAPP_FILE_STORE_PATH``, which several hosts may share). With
    ``LABAPP_FILE_STORE=database`` contents are rows of PostgreSQL
    (:mod:`labapp.content_rows`), written in the File's own transaction. The functions of
    this module that callers use (:func:`stored`, :func:`store_in_transaction`,
    :func:`restoring`, :func:`content_of` and those of ``files gc``) work on either.
"""
from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import re
import secrets
import tempfile
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import BinaryIO

from flask import current_app
from sqlalchemy import select
from sqlalchemy.engine import Connection

from labapp import content_rows
from labapp.content_rows import Readable
from labapp.db import after_commit, after_rollback, db, own_read, transaction, unit_state
from labapp.model import File

CHUNK = 1024 * 1024
_DIGEST = re.compile(r"[0-9a-f]{64}")
_PINS = ".pins"
_LOCK = ".lock"
_PARTIAL = ".upload-"
_OWNER = ".owner"

logger = logging.getLogger(__name__)


def uses_database() -> bool:
    """Whether contents live in the database (``LABAPP_FILE_STORE=database``)."""
    return bool(current_app.config["LABAPP"]["FILE_STORE"] == "database")


def store_root() -> Path:
    """The folder of the folder store: ``LABAPP_FILE_STORE_PATH``, else ``files/`` in the
    instance folder."""
    settings = current_app.config["LABAPP"]
    return Path(settings["FILE_STORE_PATH"] or Path(settings["INSTANCE_PATH"]) / "files")


def blob_path(sha256: str) -> Path:
    """Where the content with this digest lives; ValueError unless it is a SHA-256 hex
    digest (so a stored value can never point outside the store)."""
    if not _DIGEST.fullmatch(sha256):
        raise ValueError(f"not a SHA-256 hex digest: {sha256!r}")
    return store_root() / sha256[:2] / sha256[2:4] / sha256


def stored_blob(sha256: str | None) -> Path | None:
    """The file holding this content, or None when the digest is missing, malformed or has
    no content in the store."""
    if sha256 is None or not _DIGEST.fullmatch(sha256):
        return None
    path = blob_path(sha256)
    return path if path.is_file() else None


@dataclass(frozen=True)
class Blob:
    """Content in the store: its SHA-256 hex digest and size in bytes."""

    sha256: str
    size: int


@dataclass(frozen=True)
class StoredContent:
    """A content found in the store: its size, how to open it (a seekable binary file to
    close after use) and, in the folder store, its file."""

    size: int
    open: Callable[[], BinaryIO]
    path: Path | None = None


def content_of(sha256: str | None, connection: Connection | None = None
               ) -> StoredContent | None:
    """The stored content with this digest, or None when the digest is missing, malformed
    or has no content in the store. In the database store it is read on ``connection`` (say,
    an export's snapshot) when given, else found in the current session and read on
    connections of the engine lent per read."""
    if not uses_database():
        path = stored_blob(sha256)
        if path is None:
            return None
        return StoredContent(path.stat().st_size, lambda: path.open("rb"), path)
    if sha256 is None or not _DIGEST.fullmatch(sha256):
        return None
    if connection is None:
        # Found in the caller's unit; read later (a download streams after its request's
        # unit ended) on connections lent per read.
        found = content_rows.find(db.session.connection(), sha256)
        connect: content_rows.Connect = db.engine.connect
    else:
        found = content_rows.find(connection, sha256)
        connect = lambda: nullcontext(connection)  # noqa: E731
    if found is None:
        return None
    content_id, size = found
    return StoredContent(size, lambda: content_rows.open_reader(connect, content_id, size))


@contextmanager
def stored(stream: Readable) -> Iterator[Blob]:
    """Store a stream's content and run the block in the unit of work that names it:
    ``with stored(stream) as blob: create the File``. The block runs inside a
    :func:`labapp.db.transaction` opened here; when it fails, the content goes again (unless
    a committed File or another unit of work needs it). Folder store: the content is written
    before the transaction begins (:func:`staged`); database store: inside it."""
    if uses_database():
        with transaction() as session:
            yield Blob(*content_rows.write(session.connection(), stream))
        return
    with staged(stream) as blob, transaction():
        yield blob


@contextmanager
def restoring(connection: Connection, stream: Readable) -> Iterator[Blob]:
    """Store a stream's content for a restore that writes on ``connection``: database store,
    in its transaction; folder store, as :func:`staged`."""
    if uses_database():
        yield Blob(*content_rows.write(connection, stream))
        return
    with staged(stream) as blob:
        yield blob


@contextmanager
def staged(stream: Readable) -> Iterator[Blob]:
    """Store a stream's content for the unit of work that follows:
    ``with staged(stream) as blob, transaction(): ...``. The content is pinned until the
    block ends; when it ends with an exception it is removed again, unless a committed File
    or another unit of work needs it."""
    unit = _Unit()
    try:
        yield unit.store(stream)
    except BaseException:
        try:
            unit.rolled_back()
        except Exception:
            logger.exception("cleaning up the content of a rejected upload failed")
        raise
    unit.committed()


def store_in_transaction(content: bytes) -> Blob:
    """Store ``content`` as part of the current :func:`labapp.db.transaction`: kept when it
    commits, removed when it rolls back (unless a committed File or another unit of work
    needs it). RuntimeError outside a transaction."""
    if uses_database():
        session = unit_state("labapp.blobs.rows", db.session)
        return Blob(*content_rows.write(session.connection(), BytesIO(content)))
    return unit_state("labapp.blobs", _unit_of_transaction).store(BytesIO(content))


def _unit_of_transaction() -> _Unit:
    unit = _Unit()
    after_commit(unit.committed)
    after_rollback(unit.rolled_back)
    return unit


@contextmanager
def _locked() -> Iterator[Path]:
    """The store's root, locked against every other writer and collector of any process."""
    root = store_root()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / _LOCK, "ab") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield root  # closing the file releases the lock


def _write_partial(root: Path, stream: Readable) -> tuple[Path, Blob]:
    """Copy the stream into a new temporary file of the store; its path and what it holds."""
    digest = hashlib.sha256()
    size = 0
    fd, name = tempfile.mkstemp(dir=root, prefix=_PARTIAL)
    try:
        with os.fdopen(fd, "wb") as out:
            while chunk := stream.read(CHUNK):
                digest.update(chunk)
                size += len(chunk)
                out.write(chunk)
    except BaseException:
        os.unlink(name)
        raise
    return Path(name), Blob(digest.hexdigest(), size)


def _committed_references(digests: Collection[str]) -> set[str]:
    """The digests among ``digests`` that a committed File names.

    Read in a transaction of its own, begun now and ended at once: called under the store
    lock, it sees every commit made before the lock was taken.
    """
    if not digests:
        return set()
    sha256 = File.__table__.c.sha256  # the file table alone, by its index
    with own_read() as session:
        return set(session.scalars(select(sha256).distinct()
                                   .where(sha256.in_(sorted(digests)))))


def _pins_of(root: Path, sha256: str) -> list[Path]:
    return list((root / _PINS).glob(f"{sha256}.*"))


def _remove_blob(root: Path, sha256: str) -> None:
    """Remove the blob and the folders it leaves empty."""
    path = root / sha256[:2] / sha256[2:4] / sha256
    path.unlink(missing_ok=True)
    for folder in (path.parent, path.parent.parent):
        try:
            folder.rmdir()
        except OSError:  # not empty (or already gone)
            return


class _Unit:
    """The blobs one unit of work stores, each pinned until the unit ends."""

    def __init__(self) -> None:
        self.token = secrets.token_hex(16)
        self.digests: set[str] = set()
        self._owner: BinaryIO | None = None

    def _pin(self, root: Path, sha256: str) -> Path:
        return root / _PINS / f"{sha256}.{self.token}"

    def store(self, stream: Readable) -> Blob:
        root = store_root()
        root.mkdir(parents=True, exist_ok=True)
        partial, blob = _write_partial(root, stream)
        try:
            with _locked():
                self._claim(root)
                if blob.sha256 not in self.digests:
                    target = blob_path(blob.sha256)
                    if not target.exists():
                        target.parent.mkdir(parents=True, exist_ok=True)
                        os.replace(partial, target)
                    os.link(target, self._pin(root, blob.sha256))
                    self.digests.add(blob.sha256)
        finally:
            partial.unlink(missing_ok=True)
        return blob

    def _claim(self, root: Path) -> None:
        """Become a live owner of pins (called under the store lock, before the first)."""
        if self._owner is not None:
            return
        (root / _PINS).mkdir(exist_ok=True)
        owner = open(root / _PINS / f"{self.token}{_OWNER}", "wb")
        fcntl.flock(owner, fcntl.LOCK_EX | fcntl.LOCK_NB)
        self._owner = owner

    def committed(self) -> None:
        """The unit committed: every blob it stored is in place; its pins go."""
        if self._owner is None:
            return
        with _locked() as root:
            try:
                for sha256 in self.digests:
                    target, pin = blob_path(sha256), self._pin(root, sha256)
                    if not target.exists():
                        target.parent.mkdir(parents=True, exist_ok=True)
                        os.link(pin, target)
                    pin.unlink()
            finally:
                self._release(root)

    def rolled_back(self) -> None:
        """The unit rolled back: its pins go, and each blob it stored that no committed File
        names and no other unit pins."""
        if self._owner is None:
            return
        with _locked() as root:
            try:
                referenced = _committed_references(self.digests)
                for sha256 in self.digests:
                    self._pin(root, sha256).unlink(missing_ok=True)
                    if sha256 not in referenced and not _pins_of(root, sha256):
                        _remove_blob(root, sha256)
            finally:
                self._release(root)

    def _release(self, root: Path) -> None:
        """Stop owning pins; any left behind (after a failure) are stale from now on."""
        (root / _PINS / f"{self.token}{_OWNER}").unlink(missing_ok=True)
        if self._owner is not None:
            self._owner.close()
        self._owner = None
        self.digests.clear()


# --- garbage collection (flask --app labapp files gc) -------------------------------------

def _owner_is_live(path: Path) -> bool:
    """Whether a live unit of work holds this owner file's lock."""
    with open(path, "rb") as owner:
        try:
            fcntl.flock(owner, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
    return False


def _pins(root: Path) -> tuple[set[str], list[Path]]:
    """The digests live units pin, and the stale pins and owner files (under the lock)."""
    folder = root / _PINS
    if not folder.is_dir():
        return set(), []
    entries = list(folder.iterdir())
    owners = {path.name.removesuffix(_OWNER): path for path in entries
              if path.name.endswith(_OWNER)}
    live_tokens = {token for token, path in owners.items() if _owner_is_live(path)}
    live: set[str] = set()
    stale = [path for token, path in owners.items() if token not in live_tokens]
    for path in entries:
        if path.name.endswith(_OWNER):
            continue
        sha256, _, token = path.name.partition(".")
        if token in live_tokens:
            live.add(sha256)
        else:
            stale.append(path)
    return live, stale


def remove_stale_pins(*, dry_run: bool) -> int:
    """Remove the pins (and owner files) of units of work whose process is gone; returns
    how many pins that is (counted only, with ``dry_run``). The database store has none."""
    if uses_database():
        return 0
    with _locked() as root:
        _, stale = _pins(root)
        if not dry_run:
            for path in stale:
                path.unlink()
    return sum(1 for path in stale if not path.name.endswith(_OWNER))


def _older_than(path: Path, seconds: float) -> bool:
    """Whether ``path`` was last written at least ``seconds`` ago (False once it is gone:
    a writer may rename or remove its partial upload at any time)."""
    try:
        return time.time() - path.stat().st_mtime >= seconds
    except FileNotFoundError:
        return False


def remove_partial_uploads(grace_seconds: float, *, dry_run: bool) -> int:
    """Remove temporary files older than the grace period, left by a crash in the middle
    of a write; returns how many (counted only, with ``dry_run``). Database store: pieces
    no content names (see :func:`labapp.content_rows.remove_stray_chunks`)."""
    if uses_database():
        with db.engine.begin() as connection:
            return content_rows.remove_stray_chunks(connection, dry_run=dry_run)
    root = store_root()
    abandoned = [path for path in root.glob(f"{_PARTIAL}*")
                 if _older_than(path, grace_seconds)] if root.is_dir() else []
    if not dry_run:
        for path in abandoned:
            path.unlink(missing_ok=True)
    return len(abandoned)


def stored_digests() -> list[str]:
    """The digest of every blob in the store, in order. Folders that a rolled-back writer
    removes meanwhile are skipped (``os.walk`` ignores them)."""
    if uses_database():
        with db.engine.connect() as connection:
            return content_rows.stored_digests(connection)
    root = store_root()
    digests = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [name for name in subfolders if not name.startswith(".")]
        parts = Path(folder).relative_to(root).parts
        digests += [name for name in names
                    if _DIGEST.fullmatch(name) and parts == (name[:2], name[2:4])]
    return sorted(digests)


def collect_garbage(digests: Sequence[str], grace_seconds: float, *,
                    dry_run: bool) -> list[Blob]:
    """Remove the blobs among ``digests`` that no committed File names, that no live unit of
    work pins and that are older than the grace period; returns them (found, not removed,
    with ``dry_run``). Runs under the store lock (database store: in one transaction that
    locks the rows it looks at): give a few hundred digests at a time."""
    if uses_database():
        with db.engine.begin() as connection:
            return [Blob(sha256, size) for sha256, size in content_rows.collect_garbage(
                connection, digests, grace_seconds, dry_run=dry_run)]
    with _locked() as root:
        live, _ = _pins(root)
        candidates: dict[str, int] = {}
        for sha256 in digests:
            path = root / sha256[:2] / sha256[2:4] / sha256
            if sha256 in live or not path.is_file() or not _older_than(path, grace_seconds):
                continue
            candidates[sha256] = path.stat().st_size
        referenced = _committed_references(candidates)
        garbage = [Blob(sha256, size) for sha256, size in candidates.items()
                   if sha256 not in referenced]
        if not dry_run:
            for blob in garbage:
                _remove_blob(root, blob.sha256)
    return garbage
