"""The Whoosh search backend: the one package that knows Whoosh
(:class:`WhooshBackend`, an implementation of :class:`labapp.search.backend.SearchBackend`).

What it re-implements of Whoosh, and why. Whoosh's own reading and writing answered the
search bench far too slowly at 10^5-10^6 documents (bench/runs/2026-11-23-search-2.md,
bench/runs/2026-11-28-million.md), so about 1,300 lines here take over parts of it:

- Analysis is done once in plain Python (:mod:`labapp.search.analysis`, shared with the
  PostgreSQL backend), not through Whoosh's token pipeline: fields receive words already
  analysed, joined by spaces. Phrases are matched as their adjacent word pairs (field
  ``pairs``), so no positions are stored or read.
- Prefixes: the id, name and barcode words are also indexed as edge n-grams (2-12
  characters) in field ``prefix``, so ``sam*`` is one term; words of the other text are
  reached through at most :data:`searching.MAX_PREFIX_TERMS` expansions.
- Writing (:mod:`documents`): a rebuild or a large drain writes segments in worker
  processes and commits them together through Whoosh's private writer calls
  (``SegmentWriter._finalize_segment``, ``_close_segment``, ``_commit_toc``, ``_finish``);
  replaced documents are found by each segment's id range (:mod:`deleting`), not by
  Whoosh's ``delete_by_term`` (94 s for a drain of 50,000 at a million documents).
- Reading (:mod:`searching`): access and class filters are sets of document numbers,
  computed once per index generation and label set (a Whoosh query filter costs ~200 ms a
  search), held as bitmaps (:mod:`docsets`); posting lists are read a block at a time
  through ``W3LeafMatcher``'s private attributes, and the worker process that writes a
  segment also writes the bitmaps of its common terms beside it (:mod:`bitmaps`). A query
  estimated to match more than :data:`labapp.search.analysis.COMMON` documents is not scored.
- Five private methods of Whoosh are replaced (:mod:`whoosh_patches`), for a repeated
  segment name, file-system calls per posting, copies of mapped files and slow skipping.
  whoosh-reloaded is pinned to the exact version these were checked against, and
  :func:`whoosh_patches.check` refuses to start when any private method or attribute used
  here (patched or called) is no longer what it was.

What a serving process keeps across index generations (the searcher, sets, bitmaps, id
ranges) lives in the backend's instance (:class:`kept.Kept`), not in module globals; only
the stored-fields readers of :mod:`whoosh_patches` are kept per process, as the patch that
keeps them is installed in Whoosh itself.
"""
from labapp.search.analysis import (
    PHRASE,
    PREFIX,
    WORD,
    Clause,
    Document,
    Hits,
    IndexBusy,
    IndexUnavailable,
    analyse,
    text_of,
)
from labapp.search.index.documents import exists, rebuild, write
from labapp.search.index.kept import Kept
from labapp.search.index.searching import build_query, check, document_ids, forget, search, stats
from labapp.search.index.whoosh_backend import WhooshBackend

__all__ = ["PHRASE", "PREFIX", "WORD", "Clause", "Document", "Hits", "IndexBusy",
           "IndexUnavailable", "Kept", "WhooshBackend", "analyse", "build_query", "check",
           "document_ids", "exists", "forget", "rebuild", "search", "stats", "text_of",
           "write"]
