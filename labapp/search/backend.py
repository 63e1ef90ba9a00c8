"""The search backend interface: what the rest of labapp asks of full-text search, whatever
keeps its documents (``LABAPP_SEARCH_BACKEND``).

Two implementations: :class:`labapp.search.index.WhooshBackend` (an index folder on one
host, fed from the search queue after each commit or by the worker) and
:class:`labapp.search.postgresql.PostgresBackend` (a table of the database, written in the
transaction of each change). The application binds one in ``app.extensions``
(:func:`labapp.search.indexer.init_app`); callers reach it through :func:`current`. Nothing
here names a file or a folder: where a backend keeps its data is its own business.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from flask import Flask, current_app

from labapp.search.analysis import Clause, Document, Hits

BACKEND = "labapp.search.backend"  # app.extensions key
# What a write replaces: the documents to (re)write and the ids whose documents go.
Produce = Callable[[], tuple[Iterable[Document], Iterable[str]]]
Progress = Callable[[int], None]


@dataclass(frozen=True)
class Status:
    """What ``flask search status`` shows: the documents held, the space they take (None:
    not known apart from the database's), when the last write landed (None: unknown) and
    where the documents are (for people)."""

    documents: int
    bytes: int | None
    last_written: datetime | None
    where: str


class SearchBackend(Protocol):
    """Full-text search over entity documents. Every method raises
    :class:`~labapp.search.analysis.IndexUnavailable` when the documents cannot be read or
    written (a missing or damaged index: ``flask search rebuild``)."""

    name: str
    # True: documents are written in the transaction of each change (the queue rows the
    # triggers add are consumed before the commit); False: after the commit, from the queue.
    in_transaction: bool

    def exists(self) -> bool:
        """Whether there are documents to search (an index built, or the table present)."""

    def check(self) -> None:
        """Return when searches can run, else raise ``IndexUnavailable``."""

    def write(self, produce: Produce, holding: Sequence[str] = ()) -> None:
        """Replace the documents ``produce`` returns and delete those of the ids it returns,
        at once. ``produce`` is called when the backend can take them (Whoosh: under its
        write lock, so what it reads is never older than what another writer committed;
        PostgreSQL: in the caller's unit of work, once it holds the documents of the ids
        ``holding`` names, so what it reads of them is never older than what another
        writer of them committed). Raises :class:`~labapp.search.analysis.IndexBusy` when
        another writer held on too long."""

    def search(self, clauses: list[Clause], *, labels: frozenset[str] | None,
               eclasses: frozenset[str] | None, limit: int) -> Hits:
        """The best ``limit`` documents matching every clause among those a caller holding
        ``labels`` may see (None: all), of ``eclasses`` (None: all), best first; ``total``
        counts every match."""

    def document_ids(self, labels: frozenset[str] | None) -> set[str]:
        """The entity ids of every document a caller holding ``labels`` (None: all) may
        see (to check the documents against the database)."""

    def document_ids_after(self, after: str, limit: int) -> list[str]:
        """At most ``limit`` entity ids of documents greater than ``after``, in order (a
        rewrite checks every document against the database a page at a time)."""

    def rebuild(self, documents: Iterable[Document], progress: Progress | None = None) -> int:
        """Replace every document by ``documents``; return how many were written
        (``progress`` is called with each chunk's size as it is read)."""

    def status(self) -> Status:
        """How many documents there are, their size and when they were last written."""

    def forget(self) -> None:
        """Drop what this process keeps of the documents (caches, searchers)."""


def bind(app: Flask, backend: SearchBackend) -> None:
    """Make ``backend`` the application's search backend."""
    app.extensions[BACKEND] = backend


def current() -> SearchBackend:
    """The search backend of the current application."""
    backend: SearchBackend = current_app.extensions[BACKEND]
    return backend
