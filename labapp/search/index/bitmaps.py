"""A segment's posting lists as bitmaps: read a block at a time, or, for its common terms,
from a file written beside the segment when it was made.

The first use of a common term read its postings in every segment: for a word in every one
of a million documents, ~9,000 blocks of pickled ids, 1-3 s (a 2-character prefix unites
several such words; bench/runs/2026-11-28-million.md). Segments never change, so the worker process
that writes a segment (a rebuild's, or a large drain's) also writes the bitmap of each term
held by at least 1/:data:`SHARE` of its documents to ``<segment id>.bits`` (~1.7 MB for
25,000 documents): a first use then reads a few kilobytes per segment. Whoosh deletes the
file with its segment (the name matches its segment's files). Segments a commit merges or a
small write makes have none; they are small, and their postings are read as before.
"""
from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from whoosh.codec.whoosh3 import W3LeafMatcher
from whoosh.filedb.filestore import FileStorage
from whoosh.matching.wrappers import FilterMatcher
from whoosh.reading import SegmentReader

from labapp.search.index.docsets import DocSet
from labapp.search.index.kept import Kept

SUFFIX = ".bits"
MAGIC = b"labapp bits 1\n"
FIELDS = ("eclass", "labels", "text", "prefix", "pairs")
SHARE = 64  # a term in at least 1/SHARE of a segment's documents gets a bitmap
FEWEST = 64  # ... and in at least this many: below, its postings are a block or two
_LENGTH = struct.Struct("<Q")
_KEPT = 256  # segments whose table of bitmaps a process keeps (least recently used first)


def block_ids(matcher: Any) -> list[int]:
    """Every id of one segment's posting list, a block at a time. ``all_ids()`` steps
    through a list one posting at a time, three Python calls each (two thirds of a cold
    prefix query's time at 100,000 documents); a block's ids are decoded at once anyway."""
    ids: list[int] = []
    while matcher.is_active():
        matcher.block_min_id()  # decodes the block's ids into ``_ids``
        ids.extend(matcher._ids[matcher._i:])
        matcher._next_block()
    return ids


def posting_ids(leaf: Any, field: str, text: str | bytes) -> list[int]:
    """The segment-local numbers of the documents of ``leaf`` holding ``text`` in ``field``,
    deleted ones included."""
    matcher = leaf.postings(field, text)
    if isinstance(matcher, FilterMatcher) and isinstance(matcher.child, W3LeafMatcher):
        matcher = matcher.child
    return block_ids(matcher) if isinstance(matcher, W3LeafMatcher) else matcher.all_ids()


def write(folder: Path, segment: Any, schema: Any) -> None:
    """Write the bitmaps of the common terms of ``segment`` (just made in the index in
    ``folder``, not yet committed) to its file."""
    reader = SegmentReader(FileStorage(str(folder)), schema, segment)
    try:
        size = segment.doc_count_all()
        width, least = (size + 7) // 8, max(FEWEST, size // SHARE)
        terms: list[list[Any]] = []
        data: list[bytes] = []
        for field in FIELDS:
            for text, info in reader.iter_field(field):
                if info.doc_frequency() >= least:
                    terms.append([field, text.decode(), len(data) * width])
                    bits = DocSet.of(posting_ids(reader, field, text), size).bits
                    data.append(bits.to_bytes(width, "little"))
    finally:
        reader.close()
    table = json.dumps({"documents": size, "width": width, "terms": terms}).encode()
    name = segment.segment_id() + SUFFIX
    staging = folder / f".{name}.new"  # a dot file: Whoosh's clean-up leaves it alone
    with open(staging, "wb") as file:
        file.write(MAGIC + _LENGTH.pack(len(table)) + table)
        file.writelines(data)
    os.replace(staging, folder / name)


@dataclass(frozen=True)
class _Table:
    """Where each bitmap of one segment's file lies."""

    path: Path
    width: int
    start: int  # of the first bitmap
    offsets: dict[tuple[str, str], int]


def read(kept: Kept, leaf: Any, field: str, text: str | bytes) -> int | None:
    """The bitmap of ``text`` in ``field`` of the segment of ``leaf`` in the index of
    ``kept`` (whose table of each segment's bitmaps it keeps), deleted documents included,
    from the segment's file; None when the file has none (the term is not common there, or
    the segment has no file)."""
    table = _table(kept, leaf.segment())
    term = text.decode() if isinstance(text, bytes) else text
    offset = None if table is None else table.offsets.get((field, term))
    if table is None or offset is None:
        return None
    try:
        with open(table.path, "rb") as file:
            file.seek(table.start + offset)
            data = file.read(table.width)
    except OSError:  # the segment left the index since: its postings are still mapped
        return None
    return int.from_bytes(data, "little") if len(data) == table.width else None


def _table(kept: Kept, segment: Any) -> _Table | None:
    key = segment.segment_id()
    with kept.tables_lock:
        if key in kept.tables:
            kept.tables.move_to_end(key)
            found: _Table | None = kept.tables[key]
            return found
    table = _read_table(kept.path / (key + SUFFIX), segment.doc_count_all())
    with kept.tables_lock:
        kept.tables[key] = table
        if len(kept.tables) > _KEPT:
            kept.tables.popitem(last=False)
    return table


def _read_table(path: Path, size: int) -> _Table | None:
    """The table of the file at ``path`` (None: missing, or not one of ours for a segment of
    ``size`` documents)."""
    try:
        with open(path, "rb") as file:
            head = file.read(len(MAGIC) + _LENGTH.size)
            if len(head) < len(MAGIC) + _LENGTH.size or not head.startswith(MAGIC):
                return None
            (length,) = _LENGTH.unpack(head[len(MAGIC):])
            table = json.loads(file.read(length))
        if table["documents"] != size:
            return None
        return _Table(path, int(table["width"]), len(head) + length,
                      {(field, text): int(offset) for field, text, offset in table["terms"]})
    except (OSError, ValueError, KeyError, TypeError):  # missing, damaged: the postings
        return None
