"""The workarounds this index needs in Whoosh (whoosh-reloaded 2.7.5, pinned exactly in
pyproject.toml), in one place.

Each replaces one private method of Whoosh, so each first checks that the method is still
there and still does what the workaround assumes; :func:`apply` (called by
:func:`labapp.create_app` and before any index is opened or created) raises
:class:`WhooshChanged`, naming the internal, instead of patching something that is no
longer what it was. Nothing is patched at import time.

- **Segment names** (``Segment._random_id``): Whoosh names a new segment from the global
  ``random`` state, which other code may seed (Hypothesis seeds it for every example): two
  commits then pick the same name and the second fails half-way. Names from ``secrets``
  never repeat.
- **Missing length columns** (``W3PerDocReader._cached_reader``): Whoosh caches a field's
  column reader once found but asks the file system again, for every posting, about a
  field that has none (ids, labels, prefixes): ~40% of a commit's time. A segment's files
  never change, so the absence is cached too.
- **Stored fields read anew in each generation** (same method): a new searcher (one per
  index generation, see :mod:`labapp.search.index.searching`) built each segment's
  stored-fields reader again, ~8 ms a segment, so the first searches after a write at a
  million documents spent most of their time there. Segments never change, so that reader
  is kept for the process by segment id, over a file of its own.
- **Mapped files copied** (``BufferFile.__init__``): Whoosh reads a segment's files through
  ``mmap`` and wraps each in ``BytesIO(memoryview)``, which copies it: every searcher and
  writer opened held its own copy of the postings and term index (209 MiB at 100,000
  documents), and each index generation opens new ones. A raw stream over the
  ``memoryview`` reads the mapped pages in place.
- **Skipping within a block** (``W3LeafMatcher.skip_to``): Whoosh walks a block of up to 128
  postings one ``next()`` at a time to the target; an AND of a common word and a rarer one
  skips the common word's postings to each of the rarer one's documents, ~2 million Python
  calls and half the time of a two-word search at a million documents. The patched one
  finds the target in the block's ids by bisection; the postings it stops at are the same.
  (The mapped stream above also answers ``peek``, so ``pickle.load`` takes a block's header
  in one call instead of ~20 ``readinto`` calls.)

:func:`labapp.search.index.bitmaps.block_ids` reads a block of posting ids at a time
through ``W3LeafMatcher``'s private attributes, and :mod:`labapp.search.index.documents`
commits segments made by worker processes through ``SegmentWriter``'s private calls
(``_finalize_segment``, ``_close_segment``, ``_commit_toc``, ``_finish``, its ``segments``
and the ``_lk`` argument): :func:`check` covers those too.
tests/search/test_whoosh_patches.py shows each unpatched behaviour is still wrong or slow.
"""
from __future__ import annotations

import inspect
import io
import secrets
import threading
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from whoosh import writing
from whoosh.codec import base as codec_base
from whoosh.codec import whoosh3
from whoosh.filedb import structfile
from whoosh.matching import ReadTooFar


class WhooshChanged(RuntimeError):
    """An internal of Whoosh a workaround relies on is gone or changed: check the
    workaround against the installed Whoosh before starting."""


def _segment_id(_cls: type, size: int = 16) -> str:
    return secrets.token_hex(size // 2)


_PEEKED = 256  # bytes a peek returns at most: a posting block's header takes ~40


class _MappedView(io.RawIOBase):
    """A read-only, seekable stream over a buffer (a mapped file), without a copy."""

    def __init__(self, buffer: Any) -> None:
        super().__init__()
        self._view = memoryview(buffer).cast("B")
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, target: Any) -> int:
        count = max(0, min(len(target), len(self._view) - self._position))
        target[:count] = self._view[self._position:self._position + count]
        self._position += count
        return count

    def read(self, size: int = -1) -> bytes:
        end = len(self._view) if size is None or size < 0 else min(
            len(self._view), self._position + size)
        found = bytes(self._view[self._position:end])
        self._position = max(self._position, end)
        return found

    def peek(self, size: int = 0) -> bytes:
        """Up to :data:`_PEEKED` bytes ahead, not consumed: ``pickle.load`` reads a small
        pickle (a posting block's header) from them in one call, then consumes what it
        used, instead of calling ``readinto`` for each of its bytes (~20 calls a header)."""
        end = min(len(self._view), self._position + max(1, min(size, _PEEKED)))
        return bytes(self._view[self._position:end])

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: len(self._view)}
        self._position = max(0, base[whence] + offset)
        return self._position

    def tell(self) -> int:
        return self._position


def _buffer_file_init(self: Any, buf: Any, name: str | None = None,
                      onclose: Callable[..., Any] | None = None) -> None:
    """``BufferFile.__init__`` with the buffer read in place (see the module docstring)."""
    self._buf = buf
    self._name = name
    self.file = _MappedView(buf)
    self.onclose = onclose
    self.is_real = False
    self.is_closed = False


ORIGINAL_BUFFER_FILE_INIT: Callable[..., None] = structfile.BufferFile.__init__
ORIGINAL_RANDOM_ID: Callable[..., str] = vars(codec_base.Segment)["_random_id"].__func__
ORIGINAL_CACHED_READER: Callable[..., Any] = vars(whoosh3.W3PerDocReader)["_cached_reader"]
ORIGINAL_SKIP_TO: Callable[..., None] = vars(whoosh3.W3LeafMatcher)["skip_to"]
_STORED = "_stored"  # the column of a segment's stored fields
_KEPT_STORED = 256  # segments whose stored-fields reader is kept across generations
_kept_stored: OrderedDict[str, Any] = OrderedDict()
_kept_lock = threading.Lock()


def _cached_column_reader(self: Any, fieldname: str, column: Any) -> Any:
    readers = self._readers
    if fieldname not in readers:
        readers[fieldname] = (_kept_stored_reader(self, column) if fieldname == _STORED
                              else ORIGINAL_CACHED_READER(self, fieldname, column))
    return readers[fieldname]


def _kept_stored_reader(perdoc: Any, column: Any) -> Any:
    """The stored-fields reader of ``perdoc``'s segment, kept for the process by segment id
    over a file of its own (a closed searcher closes only its own files)."""
    key = perdoc._segment.segment_id()
    with _kept_lock:
        reader = _kept_stored.get(key)
        if reader is not None:
            _kept_stored.move_to_end(key)
            return reader
    if not perdoc.has_column(_STORED):
        return None
    filename = whoosh3.W3Codec.column_filename(perdoc._segment, _STORED)
    reader = column.reader(perdoc._storage.open_file(filename), 0,
                           perdoc._storage.file_length(filename), perdoc._doccount)
    with _kept_lock:
        _kept_stored[key] = reader
        if len(_kept_stored) > _KEPT_STORED:
            _kept_stored.popitem(last=False)  # the least recently used
    return reader


def _skip_to(self: Any, targetid: Any) -> None:
    """``W3LeafMatcher.skip_to``: whole blocks skipped by their largest id as Whoosh does,
    then the target found in the block's decoded ids by bisection."""
    if not self.is_active():
        raise ReadTooFar
    if targetid <= self.id():
        return
    if targetid > self._maxid:
        self._skip_to_block(lambda: targetid > self._maxid)
    while self.is_active():
        if self._ids is None:
            self._read_ids()
        self._i = bisect_left(self._ids, targetid, self._i, self._blocklength)
        if self._i < self._blocklength:
            return
        self._next_block()


def _source(thing: Any) -> str:
    try:
        return inspect.getsource(thing)
    except (OSError, TypeError):
        return ""


def _require(condition: bool, internal: str) -> None:
    if not condition:
        raise WhooshChanged(f"Whoosh changed: {internal}; the search index's workarounds "
                            "(labapp/search/index/whoosh_patches.py) must be checked again.")


def check() -> None:
    """Raise :class:`WhooshChanged` unless every internal a workaround relies on is as
    it was in whoosh-reloaded 2.7.5."""
    segment = codec_base.Segment
    _require(isinstance(vars(segment).get("_random_id"), classmethod)
             and "random_name(" in _source(ORIGINAL_RANDOM_ID),
             "Segment._random_id is no longer a classmethod calling random_name()")
    _require("self._random_id(" in _source(segment.__init__),
             "Segment.__init__ no longer names the segment through _random_id()")
    perdoc = whoosh3.W3PerDocReader
    reader = vars(perdoc).get("_cached_reader")
    _require(callable(reader) and list(inspect.signature(reader).parameters)
             == ["self", "fieldname", "column"],
             "W3PerDocReader._cached_reader(self, fieldname, column) is gone")
    original = _source(ORIGINAL_CACHED_READER)
    _require("self._readers" in original and "has_column" in original,
             "W3PerDocReader._cached_reader no longer caches in _readers after has_column()")
    _require("self._readers = {}" in _source(perdoc.__init__),
             "W3PerDocReader no longer keeps its column readers in _readers")
    _require(all(f"self.{name} = " in _source(perdoc.__init__)
                 for name in ("_segment", "_storage", "_doccount"))
             and callable(getattr(whoosh3.W3Codec, "column_filename", None))
             and f'"{_STORED}", STORED_COLUMN' in _source(perdoc.stored_fields),
             "W3PerDocReader no longer reads stored fields from the _stored column of its "
             "_segment in _storage")
    matcher = whoosh3.W3LeafMatcher
    block = _source(matcher)
    _require(all(callable(getattr(matcher, name, None))
                 for name in ("block_min_id", "_next_block", "is_active"))
             and "self._ids" in block and "self._i " in block,
             "W3LeafMatcher no longer decodes a block's ids into _ids, read from _i")
    walk = _source(ORIGINAL_SKIP_TO)
    _require(all(f"self.{name}" in block for name in (
                 "_maxid", "_blocklength", "_skip_to_block", "_read_ids"))
             and "while self.is_active() and self.id() < targetid:" in walk
             and "raise ReadTooFar" in walk,
             "W3LeafMatcher.skip_to no longer walks its block's ids to the target")
    buffer_file = _source(ORIGINAL_BUFFER_FILE_INIT)
    _require("self.file = BytesIO(buf)" in buffer_file
             and all(f"self.{name}" in buffer_file
                     for name in ("_buf", "_name", "onclose", "is_real", "is_closed")),
             "BufferFile.__init__ no longer wraps its buffer in BytesIO with these attributes")
    _check_writer()


def _check_writer() -> None:
    """The private calls of ``SegmentWriter`` that commit segments made elsewhere
    (:func:`labapp.search.index.documents._commit_segments` and ``_segment_of``)."""
    writer = writing.SegmentWriter
    _require(all(callable(getattr(writer, name, None)) for name in (
                 "_finalize_segment", "_close_segment", "_commit_toc", "_finish"))
             and "_lk" in inspect.signature(writer.__init__).parameters,
             "SegmentWriter no longer has _finalize_segment, _close_segment, _commit_toc, "
             "_finish and the _lk argument")
    finalize = _source(writer._finalize_segment)
    _require(all(call in finalize for call in (
                 "self._flush_segment()", "self._close_segment()", "return self.get_segment()")),
             "SegmentWriter._finalize_segment no longer flushes, closes and returns its segment")
    commit = _source(writer.commit)
    _require(all(call in commit for call in (
                 "self._close_segment()", "self._commit_toc(finalsegments)", "self._finish()"))
             and "self.segments = " in _source(writer.__init__)
             and list(inspect.signature(writer._commit_toc).parameters) == ["self", "segments"],
             "SegmentWriter.commit no longer closes its segment, writes the table of contents "
             "of a list of segments and finishes; or it no longer keeps them in segments")


_applied = [False]
_applying = threading.Lock()


def apply() -> None:
    """Check Whoosh's internals (:func:`check`), then install the workarounds; once per
    process, however often it is called."""
    with _applying:
        if _applied[0]:
            return
        check()
        codec_base.Segment._random_id = classmethod(_segment_id)
        whoosh3.W3PerDocReader._cached_reader = _cached_column_reader
        structfile.BufferFile.__init__ = _buffer_file_init
        whoosh3.W3LeafMatcher.skip_to = _skip_to
        _applied[0] = True
