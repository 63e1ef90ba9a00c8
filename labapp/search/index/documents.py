"""Documents of the Whoosh index: the schema and the writer (the analysis is
:mod:`labapp.search.analysis`, shared with the PostgreSQL backend)."""
from __future__ import annotations

import gc
import itertools
import multiprocessing
import os
import shutil
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from whoosh import index as whoosh_index
from whoosh.analysis import SpaceSeparatedTokenizer
from whoosh.codec.whoosh3 import W3Codec
from whoosh.fields import ID, KEYWORD, TEXT, Schema
from whoosh.writing import CLEAR, MERGE_SMALL, SegmentWriter

from labapp.search.analysis import Document, IndexBusy, IndexUnavailable, words_of
from labapp.search.index import bitmaps, whoosh_patches
from labapp.search.index.deleting import delete_ids
from labapp.search.index.kept import Kept

# A rebuild of more than SEGMENT_DOCUMENTS documents runs in PROCESSES worker processes, one
# segment per SEGMENT_DOCUMENTS; each segment's postings are sorted in memory below LIMIT_MB
# (Whoosh's estimate; beyond it they are pickled to disk and merged back, a third of the
# build's time at 128).
PROCESSES = 2
SEGMENT_DOCUMENTS = 25_000
LIMIT_MB = 1024
# A drain of more than DRAIN_SEGMENT_DOCUMENTS documents runs in the worker processes too.
DRAIN_SEGMENT_DOCUMENTS = 5_000
# Index commits other than a rebuild merge only segments smaller than this.
SMALL_SEGMENT = 5_000
# Posting blocks are written uncompressed: zlib took ~10% of a segment's indexing time (most
# blocks hold a posting or two, which Whoosh compresses whatever their size) and reading
# them back decompressed each; the index is 10-30% larger for it.
CODEC = W3Codec(compression=0)
# The text and prefix fields receive words already analysed here, joined by spaces: one pass
# of plain Python per document instead of Whoosh's token pipeline (and a second one for the
# pairs), which cost most of the indexing time.
_SPACED = SpaceSeparatedTokenizer()
SCHEMA = Schema(
    id=ID(stored=True, unique=True),
    eclass=ID(),
    labels=KEYWORD(),
    text=TEXT(analyzer=_SPACED, phrase=False),
    prefix=TEXT(analyzer=_SPACED, phrase=False),
    pairs=KEYWORD(lowercase=False, scorable=True),
)
# Prefix matches only select documents; the words of the text field score them.
SCHEMA["prefix"].scorable = False


def exists(path: Path) -> bool:
    """Whether an index has been created in ``path``."""
    try:
        return path.is_dir() and whoosh_index.exists_in(str(path))
    except Exception:  # a damaged table of contents: there is an index, unreadable
        return True


def open_index(path: Path) -> whoosh_index.Index:
    """The index in ``path`` (:class:`IndexUnavailable` when missing or unreadable), with
    the Whoosh workarounds applied."""
    whoosh_patches.apply()
    if not exists(path):
        raise IndexUnavailable(f"No search index in {path.name}/.")
    try:
        return whoosh_index.open_dir(str(path))
    except Exception as error:  # Whoosh raises many kinds on damaged files
        raise IndexUnavailable(f"The search index cannot be read: {error}") from error


def _fields(document: Document) -> dict[str, str]:
    words = words_of(document)
    return {"id": document.id, "eclass": document.eclass,
            "labels": " ".join(sorted(document.labels)),
            "text": " ".join(words.text), "prefix": " ".join(words.prefixes),
            "pairs": " ".join(words.pairs)}


def write(kept: Kept, produce: Callable[[], tuple[Iterable[Document], Iterable[str]]],
          timeout: float, segment_size: int = DRAIN_SEGMENT_DOCUMENTS) -> None:
    """Take the write lock (waiting up to ``timeout`` seconds for another worker, then
    :class:`IndexBusy`), call ``produce`` for the documents to replace and the ids to
    delete, and commit them at once. ``produce`` runs under the lock, so what it reads is
    never older than what another writer has committed before.

    More than ``segment_size`` documents are indexed by worker processes, a segment per
    ``segment_size`` (:func:`rebuild`). The commit merges only small segments
    (:func:`_merge_small_only`), so it never rewrites the big ones a rebuild made.
    """
    path = kept.path
    index = open_index(path)
    try:
        writer = index.writer(timeout=timeout, limitmb=LIMIT_MB, codec=CODEC)
    except whoosh_index.LockError as error:
        raise IndexBusy("The search index is locked by another writer.") from error
    try:
        with _collecting_less():
            produced, gone = produce()
            # In id order, as a rebuild writes them: each segment then holds a narrow range
            # of ids, which replacing them later looks up (:mod:`deleting`).
            documents = sorted(produced, key=lambda document: document.id)
            deleted = list(gone)
            delete_ids(writer, itertools.chain(deleted, (item.id for item in documents)), kept)
            if len(documents) > segment_size:
                segments = _segments(path, _chunks(documents, segment_size, None))
            else:
                for document in documents:
                    writer.add_document(**_fields(document))
                segments = []
    except BaseException:
        writer.cancel()
        raise
    if not documents and not deleted:
        writer.cancel()
        return
    if segments:
        _commit_segments(writer, segments)
    else:
        _commit(writer, mergetype=_merge_small_only)


def _merge_small_only(writer: Any, segments: list[Any]) -> list[Any]:
    """Whoosh's MERGE_SMALL among the segments of fewer than :data:`SMALL_SEGMENT`
    documents; the others are kept as they are. On all of them, MERGE_SMALL's heuristic
    (merge the ``i + 1`` smallest when they hold fewer than ``fib(i + 5)`` documents) would
    merge 26 segments of 25,000, 650,000 documents, in one drain commit after a rebuild of
    a million."""
    small = [segment for segment in segments if segment.doc_count_all() < SMALL_SEGMENT]
    kept = [segment for segment in segments if segment.doc_count_all() >= SMALL_SEGMENT]
    merged: list[Any] = MERGE_SMALL(writer, small)
    return kept + merged


def _commit_segments(writer: Any, segments: list[Any]) -> None:
    """Commit ``writer``'s deletions with ``segments`` (made by worker processes) added
    after its existing segments; its own segment stays empty."""
    try:
        writer._close_segment()
        writer._commit_toc([*writer.segments, *segments])
    except Exception as error:
        raise IndexUnavailable(f"The search index could not be written: {error}") from error
    finally:
        writer._finish()


def _commit(writer: Any, **options: Any) -> None:
    """Commit; a failed commit releases the lock (Whoosh keeps it) and raises
    :class:`IndexUnavailable`."""
    try:
        writer.commit(**options)
    except Exception as error:
        writer.cancel()
        raise IndexUnavailable(f"The search index could not be written: {error}") from error


def rebuild(kept: Kept, documents: Iterable[Document], timeout: float,
            progress: Callable[[int], None] | None = None,
            segment_size: int | None = None) -> int:
    """Replace the whole index by ``documents``; return how many were written.

    A readable index is rewritten under its write lock (searches go on with the old
    documents until the commit); a missing or damaged one is built in a new folder that
    then takes its place. Up to ``segment_size`` documents are indexed in this process;
    more are indexed by :data:`PROCESSES` worker processes, one segment per
    ``segment_size`` (default :data:`SEGMENT_DOCUMENTS`) documents, the segments in the
    order of ``documents`` (so document numbers follow it, as in one segment).
    """
    segment_size = segment_size or SEGMENT_DOCUMENTS
    path = kept.path
    try:
        index = open_index(path)
    except IndexUnavailable:
        return _build_fresh(path, documents, progress, segment_size)
    try:
        writer = index.writer(timeout=timeout, limitmb=LIMIT_MB, codec=CODEC)
    except whoosh_index.LockError as error:
        raise IndexBusy("The search index is locked by another writer.") from error
    return _build(path, writer, documents, progress, segment_size)


def _build(folder: Path, writer: Any, documents: Iterable[Document],
           progress: Callable[[int], None] | None, segment_size: int) -> int:
    """Write ``documents`` as the index's only ones through ``writer`` and commit."""
    try:
        with _collecting_less():
            chunks = _chunks(documents, segment_size, progress)
            first = next(chunks, [])
            following = next(chunks, None)
            if following is None:  # small: this process, one segment
                for document in first:
                    writer.add_document(**_fields(document))
                _commit(writer, mergetype=CLEAR)
                return len(first)
            segments = _segments(folder, itertools.chain((first, following), chunks))
    except BaseException:
        writer.cancel()
        raise
    writer.segments = []  # replaced: the old segments' files are deleted at the commit
    _commit_segments(writer, segments)
    return sum(segment.doc_count_all() for segment in segments)


def _segments(folder: Path, chunks: Iterable[list[Document]]) -> list[Any]:
    """Index each chunk into a segment of its own in a worker process; the segments in the
    order of ``chunks``. At most one chunk per process waits, so memory stays bounded."""
    segments: list[Any] = []
    # Forked, not spawned: a spawned worker runs the parent's main script again (any
    # script calling this without a ``__main__`` guard would start over). A forked worker
    # runs only Whoosh and never touches the connections or threads it inherited.
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(PROCESSES, mp_context=context) as pool:
        pending: deque[Future[Any]] = deque()
        for chunk in chunks:
            while len(pending) >= 2 * PROCESSES:
                segments.append(pending.popleft().result())
            pending.append(pool.submit(_segment_of, str(folder), chunk))
        segments.extend(future.result() for future in pending)
    return segments


def _segment_of(folder: str, documents: list[Document]) -> Any:
    """In a worker process: index ``documents`` into a new segment of the index in
    ``folder`` and return it, not yet part of the index (the parent holds the write lock
    and commits the segments together)."""
    # The worker was forked while the parent collected less, so its collector is off for
    # good: the previous segment's writer (cycles of postings, ~1 GB at 25,000 documents)
    # would never be freed, and at a million documents each worker held 9 GB.
    gc.collect()
    whoosh_patches.apply()
    writer = SegmentWriter(whoosh_index.open_dir(folder), _lk=False, limitmb=LIMIT_MB,
                           codec=CODEC)
    try:
        with _collecting_less():
            for document in documents:
                writer.add_document(**_fields(document))
            segment = writer._finalize_segment()
            bitmaps.write(Path(folder), segment, SCHEMA)
            return segment
    except BaseException:
        writer._close_segment()
        raise


@contextmanager
def _collecting_less() -> Iterator[None]:
    """No garbage collection while a segment's postings pile up: each of the millions of
    posting tuples is tracked, and every full collection walked them all again."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _chunks(documents: Iterable[Document], size: int,
            progress: Callable[[int], None] | None) -> Iterator[list[Document]]:
    iterator = iter(documents)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk
        if progress is not None:
            progress(len(chunk))


def _build_fresh(path: Path, documents: Iterable[Document],
                 progress: Callable[[int], None] | None, segment_size: int) -> int:
    staging = path.with_name(path.name + ".new")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    whoosh_patches.apply()
    index = whoosh_index.create_in(str(staging), SCHEMA)
    try:
        count = _build(staging, index.writer(limitmb=LIMIT_MB, codec=CODEC), documents, progress,
                       segment_size)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if path.exists():
        retired = path.with_name(path.name + ".old")
        shutil.rmtree(retired, ignore_errors=True)
        os.replace(path, retired)
        os.replace(staging, path)
        shutil.rmtree(retired, ignore_errors=True)
    else:
        os.replace(staging, path)
    return count
