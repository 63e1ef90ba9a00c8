"""Finding the documents of entity ids in the index's segments, to replace or delete them.

Whoosh's ``delete_by_term`` (and ``update_document``, which calls it) looks one id up in
every segment through a new query matcher each time: at a million documents (40 segments)
a drain of 50,000 changed entities spent 94 s there alone (bench/runs/2026-11-28-million.md).
Here each segment is asked only for the ids that can be in it, by the range of ids it holds, and
either looks them up one by one or, when they are many for its size, reads its ids in order
once. A rebuild writes its segments in id order, so each id falls in the range of one of
them.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from typing import Any

from labapp.search.index.kept import Kept

ID = "id"
# Reading a segment's next id in order costs about half of looking one up.
_SCAN_COST, _LOOKUP_COST = 1, 2
_KEPT_RANGES = 1024  # segments whose id range a backend keeps (segments never change)


def delete_ids(writer: Any, ids: Iterable[str], kept: Kept) -> int:
    """Mark every document of ``ids`` deleted in the segments ``writer`` holds (its own new
    documents are not among them); return how many documents were marked. ``kept``: the
    backend's caches, where each segment's id range is kept."""
    wanted = sorted({entity_id.encode() for entity_id in ids})
    if not wanted:
        return 0
    marked = 0
    for leaf, base in writer.searcher().reader().leaf_readers():
        for docnum in _docnums(leaf, wanted, kept):
            writer.delete_document(base + docnum)
            marked += 1
    return marked


def _docnums(leaf: Any, wanted: list[bytes], kept: Kept) -> Iterator[int]:
    """The segment-local numbers of the documents of ``leaf`` whose id is in ``wanted``
    (sorted)."""
    bounds = _id_range(leaf, kept) if leaf.doc_count_all() else None  # an empty index
    if bounds is None:
        return
    start, end = bisect_left(wanted, bounds[0]), bisect_right(wanted, bounds[1])
    if start == end:
        return
    if (end - start) * _LOOKUP_COST <= leaf.doc_count_all() * _SCAN_COST:
        for text in wanted[start:end]:
            if (ID, text) in leaf:
                yield from _term_docnums(leaf, text, leaf.term_info(ID, text))
        return
    among = set(wanted[start:end])
    for (field, text), info in leaf.iter_from(ID, wanted[start]):
        if field != ID or text > bounds[1]:
            return
        if text in among:
            yield from _term_docnums(leaf, text, info)


def _term_docnums(leaf: Any, text: bytes, info: Any) -> Iterator[int]:
    """The documents of one id term: an id names one document in a segment (its number is
    in the term's statistics); more (a segment written before a replacement was deleted)
    are read from the postings."""
    if info.doc_frequency() == 1:
        yield info.min_id()
    else:
        yield from leaf.postings(ID, text).all_ids()


def _id_range(leaf: Any, kept: Kept) -> tuple[bytes, bytes] | None:
    """The lowest and highest id term of the segment of ``leaf`` (None: it has none), kept
    in ``kept`` by segment id."""
    key = leaf.segment().segment_id()
    with kept.ranges_lock:
        if key in kept.ranges:
            kept.ranges.move_to_end(key)
            return kept.ranges[key]
    found = _read_range(leaf)
    with kept.ranges_lock:
        kept.ranges[key] = found
        if len(kept.ranges) > _KEPT_RANGES:
            kept.ranges.popitem(last=False)  # the least recently used
    return found


def _read_range(leaf: Any) -> tuple[bytes, bytes] | None:
    """The range of a segment's id terms. The lowest is the first in term order; the
    highest is the id of its last document when that is the last id term (a rebuild and a
    drain write documents in id order), else found by reading on from there."""
    first = next(leaf.iter_from(ID, b""), None)
    if first is None or first[0][0] != ID:
        return None
    highest = leaf.stored_fields(leaf.doc_count_all() - 1)[ID].encode()
    for (field, text), _info in leaf.iter_from(ID, highest):
        if field != ID:
            break
        highest = text
    return first[0][1], highest
