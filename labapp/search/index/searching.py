"""Answering queries: one searcher per process and index folder, filters as sets of
document numbers, unscored reads of common terms."""
from __future__ import annotations

import functools
import operator
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from itertools import islice
from pathlib import Path
from typing import Any

from whoosh import query as wq
from whoosh.codec.whoosh3 import W3LeafMatcher
from whoosh.matching.wrappers import FilterMatcher

from labapp.search.analysis import COMMON, PREFIX, Clause, Hits, IndexUnavailable, terms_of
from labapp.search.index import bitmaps
from labapp.search.index.bitmaps import block_ids, posting_ids
from labapp.search.index.docsets import DocSet
from labapp.search.index.documents import open_index
from labapp.search.index.kept import Kept

MAX_PREFIX_TERMS = 64  # expansions of a prefix outside the edge n-gram field
_CACHED_SETS = 64
_OPEN_ATTEMPTS = 3  # opening a searcher again when a commit removed its generation's files
_SEGMENT_SETS = 4096  # segment bitmaps kept across generations (a bit per document each)

class _Cached:
    """A backend's searcher of its index's latest generation, with the sets computed on it
    (the :data:`_CACHED_SETS` most recently used)."""

    def __init__(self, searcher: Any, kept: Kept) -> None:
        self.searcher = searcher
        self.kept = kept
        self.sets: OrderedDict[object, DocSet] = OrderedDict()
        self.size = searcher.reader().doc_count_all()


def _current(kept: Kept) -> _Cached:
    with kept.lock:
        cached: _Cached | None = kept.searcher
        if cached is not None:
            try:
                if cached.searcher.up_to_date():
                    return cached
            except Exception:  # the folder was replaced or damaged: open it again
                pass
        # A new searcher, not ``searcher.refresh()``: the refreshed one reuses the readers of
        # unchanged segments with their old deletions, so a replaced document's old version
        # kept matching its old words. The old searcher is left to the garbage collector
        # (a request of another thread may still be reading it).
        fresh = _Cached(_open_searcher(kept.path), kept)
        kept.searcher = fresh
        return fresh


def _open_searcher(path: Path) -> Any:
    """A searcher of the index's latest generation. A writer that commits while it opens
    removes the generation it was reading (``FileNotFoundError``, a 503 once in an hour of
    soak at a million documents): it is opened again, up to :data:`_OPEN_ATTEMPTS` times."""
    attempt = 1
    while True:
        try:
            return open_index(path).searcher()
        except (FileNotFoundError, IndexUnavailable) as error:
            gone = isinstance(error, FileNotFoundError) or isinstance(
                error.__cause__, FileNotFoundError)
            if not gone or attempt >= _OPEN_ATTEMPTS:
                raise
            attempt += 1


def _searcher(kept: Kept) -> Any:
    try:
        return _current(kept).searcher
    except IndexUnavailable:
        raise
    except Exception as error:
        raise IndexUnavailable(f"The search index cannot be read: {error}") from error


def forget(kept: Kept) -> None:
    """Drop the backend's searcher and caches (after the folder was replaced)."""
    with kept.lock:
        cached, kept.searcher = kept.searcher, None
    kept.clear()
    if cached is not None:
        cached.searcher.close()


def _docnums(cached: _Cached, key: object, make: Callable[[], DocSet]) -> DocSet:
    found = cached.sets.get(key)
    if found is None:
        found = cached.sets[key] = make()
        if len(cached.sets) > _CACHED_SETS:
            cached.sets.popitem(last=False)  # the least recently used
    else:
        cached.sets.move_to_end(key)
    return found


def _segment_bits(leaf: Any, field: str, text: str | bytes, kept: Kept | None) -> int:
    """The documents of ``leaf`` holding ``text`` in ``field`` (deleted ones included) as a
    bitmap, kept for the process across index generations: a segment's postings never
    change (deletions are kept beside them), and a write adds a small segment to dozens of
    unchanged ones. Read from the segment's file of bitmaps (:mod:`bitmaps`) when it has
    the term, else from its postings. Reading a reader's labels anew in each generation took
    0.9 s at a million documents. Without ``kept`` (the backend's caches) nothing is kept
    and no file of bitmaps read."""
    if kept is None:
        return DocSet.of(posting_ids(leaf, field, text), leaf.doc_count_all()).bits
    key = (leaf.segment().segment_id(), field,
           text.decode() if isinstance(text, bytes) else text)  # expansions are bytes
    with kept.lock:
        found = kept.segment_sets.get(key)
        if found is not None:
            kept.segment_sets.move_to_end(key)
            return found
    bits = bitmaps.read(kept, leaf, field, text)
    if bits is None:
        bits = DocSet.of(posting_ids(leaf, field, text), leaf.doc_count_all()).bits
    with kept.lock:
        kept.segment_sets[key] = bits
        if len(kept.segment_sets) > _SEGMENT_SETS:
            kept.segment_sets.popitem(last=False)  # the least recently used
    return bits


def term_bits(reader: Any, field: str, values: Iterable[str],
              kept: Kept | None = None) -> DocSet:
    """The live documents holding any of ``values`` in ``field``, from the segments' kept
    bitmaps (:func:`_segment_bits`; ``kept``: the backend's caches), united per segment,
    then each without its deleted documents, at its base."""
    wanted = list(values)
    bits = 0
    for leaf, base in reader.leaf_readers():
        found = 0
        for value in wanted:
            if (field, value) in leaf:
                found |= _segment_bits(leaf, field, value, kept)
        deleted = leaf.deleted_docs_set if found else None
        if deleted:
            found &= ~DocSet.of(deleted, leaf.doc_count_all()).bits
        bits |= found << base
    return DocSet(bits)


def term_ids(reader: Any, field: str, text: str) -> list[int]:
    """The document numbers of the live documents holding ``text`` in ``field``."""
    found: list[int] = []
    for leaf, base in reader.leaf_readers():
        if (field, text) not in leaf:
            continue
        matcher = leaf.postings(field, text)
        deleted = None
        if isinstance(matcher, FilterMatcher) and isinstance(matcher.child, W3LeafMatcher):
            matcher, deleted = matcher.child, leaf.deleted_docs_set
        ids = block_ids(matcher) if isinstance(matcher, W3LeafMatcher) else matcher.all_ids()
        if deleted:
            ids = [docnum for docnum in ids if docnum not in deleted]
        found.extend([docnum + base for docnum in ids] if base else ids)
    return found


def _term_docs(cached: _Cached, field: str, values: Iterable[str]) -> DocSet:
    return term_bits(cached.searcher.reader(), field, values, cached.kept)


def _allowed(cached: _Cached, labels: frozenset[str] | None,
             eclasses: frozenset[str] | None) -> DocSet | None:
    """The documents a caller with ``labels`` (None: all) may see, of ``eclasses`` (None:
    all); None when nothing is excluded."""
    allowed = None
    if labels is not None:
        allowed = _docnums(cached, ("labels", labels),
                           lambda: _term_docs(cached, "labels", labels))
    if eclasses is not None:
        of_class = _docnums(cached, ("eclass", eclasses),
                            lambda: _term_docs(cached, "eclass", eclasses))
        allowed = of_class if allowed is None else allowed & of_class
    return allowed


def _prefix_query(reader: Any, stem: str, ngram: bool) -> wq.Query:
    expansions = [wq.Term("text", term) for term in
                  islice(reader.expand_prefix("text", stem), MAX_PREFIX_TERMS)]
    if ngram:
        expansions.append(wq.Term("prefix", stem))
    return wq.Or(expansions) if expansions else wq.NullQuery


def _clause_query(reader: Any, kind: str, text: str) -> wq.Query:
    terms = terms_of(kind, text)
    if terms.nothing:
        return wq.NullQuery
    if kind == PREFIX and terms.stem is not None:
        return _prefix_query(reader, terms.stem, terms.ngram)
    if terms.word is not None:
        return wq.Term("text", terms.word)
    # A phrase is each of its adjacent word pairs (exact for two words; longer phrases whose
    # pairs all occur elsewhere in the text also match): no positions to read, which costs
    # ~70 µs a candidate document when the phrase holds common words. The pairs score it.
    return wq.And([wq.Term("pairs", pair) for pair in terms.pairs])


def build_query(reader: Any, clauses: Iterable[Clause]) -> wq.Query:
    """The Whoosh query of AND-ed clauses (an empty one matches nothing)."""
    parts = [_clause_query(reader, kind, text) for kind, text in clauses]
    if not parts or any(part is wq.NullQuery for part in parts):
        return wq.NullQuery
    return parts[0] if len(parts) == 1 else wq.And(parts)


def search(kept: Kept, clauses: list[Clause], *, labels: frozenset[str] | None,
           eclasses: frozenset[str] | None, limit: int) -> Hits:
    """The best ``limit`` documents matching every clause among those a caller holding
    ``labels`` may see (None: all), of ``eclasses`` (None: all), best first."""
    try:
        cached = _current(kept)
    except IndexUnavailable:
        raise
    except Exception as error:
        raise IndexUnavailable(f"The search index cannot be read: {error}") from error
    searcher = cached.searcher
    query = build_query(searcher.reader(), clauses)
    if query is wq.NullQuery:
        return Hits([], 0)
    allowed = _allowed(cached, labels, eclasses)
    if allowed is not None and not allowed:
        # Whoosh reads an empty filter as no filter at all: it would let every match through.
        return Hits([], 0)
    # The size, not Whoosh's minimum size: for an Or (a prefix's expansions) that is the
    # smallest expansion's, so one rare word among them ("project" beside "prepared" for
    # ``pr*``) had the whole prefix scored, through every expansion's postings: 1.9 s at a
    # million documents.
    if query.estimate_size(searcher.reader()) > COMMON:
        return _unscored(cached, query, allowed, limit)
    # Without block-quality skipping the collector counts every match as it scores it;
    # with it, the total would take a second run of the query (half of a prefix's time).
    # Whoosh refuses a limit of 0 ($top=0 asks for the count alone): collect one, keep none.
    results = searcher.search(query, limit=max(limit, 1), filter=allowed, optimize=False)
    items = [(hit["id"], float(hit.score)) for hit in results][:limit]
    return Hits(items, len(results))


def document_ids(kept: Kept, labels: frozenset[str] | None) -> set[str]:
    """The entity ids of every document a caller holding ``labels`` (None: all) may see
    (to check the index against the database)."""
    cached = _current(kept)
    allowed = _allowed(cached, labels, None)
    searcher = cached.searcher
    docnums = allowed if allowed is not None else searcher.reader().all_doc_ids()
    return {searcher.stored_fields(docnum)["id"] for docnum in docnums}


def _matching(cached: _Cached, query: wq.Query) -> DocSet:
    """The documents matching ``query``: the posting lists of its terms, united for an Or and
    intersected for an And, without Whoosh's matcher machinery (a prefix's dozens of
    expansions cost ~100 ms through it at 100,000 documents); common terms' lists are kept
    for the index generation, so ``pr*`` and ``pre*`` share ``prepared``."""
    if isinstance(query, wq.Term):
        return _term_set(cached, query.fieldname, query.text)
    if isinstance(query, wq.Or) and query.subqueries and all(
            isinstance(part, wq.Term) for part in query.subqueries):
        return _any_term(cached, [(part.fieldname, part.text) for part in query.subqueries])
    if isinstance(query, (wq.Or, wq.And)) and query.subqueries:
        parts = [_matching(cached, part) for part in query.subqueries]
        combine = operator.or_ if isinstance(query, wq.Or) else operator.and_
        return functools.reduce(combine, parts)
    return DocSet.of(cached.searcher.docs_for_query(query), cached.size)


def _term_set(cached: _Cached, field: str, text: str) -> DocSet:
    reader = cached.searcher.reader()
    if (field, text) not in reader:
        return DocSet()
    if reader.doc_frequency(field, text) < COMMON:
        return DocSet.of(term_ids(reader, field, text), cached.size)
    return _docnums(cached, ("term", field, text),
                    lambda: term_bits(reader, field, [text], cached.kept))


def _any_term(cached: _Cached, terms: list[tuple[str, str]]) -> DocSet:
    """The documents holding any of ``terms`` (a prefix's expansions): the common ones
    united per segment, then placed once (placing each term's segments on their own cost
    40 shifts of a million-bit number per term at a million documents), the rare ones read
    from their postings."""
    reader = cached.searcher.reader()
    common: dict[str, list[str]] = defaultdict(list)
    rare: list[int] = []
    for field, text in terms:
        frequency = reader.doc_frequency(field, text)
        if frequency >= COMMON:
            common[field].append(text)
        elif frequency:
            rare.extend(term_ids(reader, field, text))
    found = DocSet.of(rare, cached.size)
    for field, values in common.items():
        found |= term_bits(reader, field, values, cached.kept)
    return found


def _unscored(cached: _Cached, query: wq.Query, allowed: DocSet | None,
              limit: int) -> Hits:
    """A very common query: its matches are read once per index generation (not scored,
    which costs far more), and the first ``limit`` visible ones in index order returned."""
    searcher = cached.searcher
    matching = _docnums(cached, ("query", repr(query)), lambda: _matching(cached, query))
    visible = matching if allowed is None else matching & allowed
    first = visible.smallest(limit)
    items = [(searcher.stored_fields(docnum)["id"], 0.0) for docnum in first]
    return Hits(items, len(visible))


def check(kept: Kept) -> None:
    """Raise :class:`IndexUnavailable` unless the index opens and its searcher works."""
    _searcher(kept)


def stats(kept: Kept) -> dict[str, int]:
    """``documents`` in the index and its ``bytes`` on disk."""
    searcher = _searcher(kept)
    size = sum(item.stat().st_size for item in kept.path.iterdir() if item.is_file())
    return {"documents": searcher.doc_count(), "bytes": size}
