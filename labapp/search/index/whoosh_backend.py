"""The Whoosh backend of :class:`labapp.search.backend.SearchBackend`: an index folder on
this host, fed from the search queue after each commit or by the worker."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from labapp.search.analysis import Clause, Document, Hits, IndexUnavailable
from labapp.search.backend import Produce, Progress, Status
from labapp.search.index import documents, searching, whoosh_patches
from labapp.search.index.kept import Kept


class WhooshBackend:
    """The index in ``path`` (its folder; created by the first rebuild). ``timeout``: the
    seconds a writer waits for another's write lock. What the backend keeps across index
    generations (searcher, bitmaps, segments' id ranges) lives in this instance."""

    name = "whoosh"
    in_transaction = False

    def __init__(self, path: Path, timeout: float) -> None:
        whoosh_patches.apply()  # a Whoosh that changed stops the start, loudly
        self.kept = Kept(path)
        self.timeout = timeout

    @property
    def path(self) -> Path:
        """The index folder (for the worker's heartbeat beside it and the tests)."""
        return self.kept.path

    def exists(self) -> bool:
        """Whether an index has been created in the folder."""
        return documents.exists(self.kept.path)

    def check(self) -> None:
        """Raise :class:`IndexUnavailable` unless the index opens and its searcher works."""
        searching.check(self.kept)

    def write(self, produce: Produce, holding: Sequence[str] = ()) -> None:
        """Replace and delete documents under the index's write lock
        (:func:`labapp.search.index.documents.write`), which holds every document: the ids
        ``holding`` names need nothing more."""
        documents.write(self.kept, produce, self.timeout)

    def search(self, clauses: list[Clause], *, labels: frozenset[str] | None,
               eclasses: frozenset[str] | None, limit: int) -> Hits:
        """See :func:`labapp.search.index.searching.search`."""
        return searching.search(self.kept, clauses, labels=labels, eclasses=eclasses,
                                limit=limit)

    def document_ids(self, labels: frozenset[str] | None) -> set[str]:
        """The ids of the documents a caller holding ``labels`` may see."""
        return searching.document_ids(self.kept, labels)

    def document_ids_after(self, after: str, limit: int) -> list[str]:
        """A page of the ids of the documents after ``after``: from every id at once, as the
        index is rebuilt whole (never rewritten a page at a time)."""
        return sorted(id_ for id_ in self.document_ids(None) if id_ > after)[:limit]

    def rebuild(self, documents_: Iterable[Document], progress: Progress | None = None) -> int:
        """Replace the whole index (:func:`labapp.search.index.documents.rebuild`), then
        forget the searcher of the replaced one."""
        try:
            return documents.rebuild(self.kept, documents_, self.timeout, progress)
        finally:
            self.forget()

    def status(self) -> Status:
        """Documents, bytes on disk and the time of the folder's last change."""
        stats = searching.stats(self.kept)
        try:
            last = max(item.stat().st_mtime for item in self.kept.path.iterdir())
        except (OSError, ValueError) as error:
            raise IndexUnavailable(f"The search index cannot be read: {error}") from error
        return Status(stats["documents"], stats["bytes"], datetime.fromtimestamp(last, UTC),
                      f"index folder {self.kept.path}")

    def forget(self) -> None:
        """Drop the searcher and every cache of this backend."""
        searching.forget(self.kept)
