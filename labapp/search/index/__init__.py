"""The search index: the one package that knows Whoosh (a PostgreSQL full-text backend can sit
behind the same functions later).

Documents (:class:`Document`) hold an entity's searchable text, its class and its access
labels. Queries arrive already parsed (:data:`Clause`: ``("word"|"phrase"|"prefix", text)``,
AND-ed) and are answered as ``(entity id, score)`` pairs plus a total. What keeps every
query kind fast at 100,000 documents (bench/runs/2026-11-23-search-2.md):

- Text is tokenised for lab identifiers: ``SAM00042``, ``K-12``, ``pH7.4``, ``β-actin`` stay
  whole, and their parts (``k``, ``12``, ``ph7``, ``4``) are indexed too, so both the
  identifier and its parts are found. Case and accents are folded.
- Phrases are matched as their adjacent word pairs (field ``pairs``), so no positions are
  stored or read.
- Prefixes: the id, name and barcode words are also indexed as edge n-grams (2-12
  characters) in field ``prefix``, so ``sam*`` is one term; words of the other text are
  reached through at most :data:`MAX_PREFIX_TERMS` expansions.
- Access and class filters are sets of document numbers, computed once per index generation
  and label set (a Whoosh query filter costs ~200 ms a search), held as bitmaps
  (:mod:`labapp.search.index.docsets`); posting lists are read a block at a time, and the
  worker process that writes a segment also writes the bitmaps of its common terms beside
  it (:mod:`labapp.search.index.bitmaps`), so a common word's first use reads no postings.
- A query estimated to match more than :data:`COMMON` documents is not scored: its matches
  are read once per index generation and the first ones in index order are returned.
- One searcher per process and index folder, opened again when the index has changed.
"""
from labapp.search.index.documents import (
    PHRASE,
    PREFIX,
    WORD,
    Clause,
    Document,
    Hits,
    IndexBusy,
    IndexUnavailable,
    analyse,
    exists,
    rebuild,
    text_of,
    write,
)
from labapp.search.index.searching import build_query, check, document_ids, forget, search, stats

__all__ = ["PHRASE", "PREFIX", "WORD", "Clause", "Document", "Hits", "IndexBusy",
           "IndexUnavailable", "analyse", "build_query", "check", "document_ids", "exists",
           "forget", "rebuild", "search", "stats", "text_of", "write"]
