"""Documents of the search index: the schema, lab-friendly analysis and the writer."""
from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from whoosh import index as whoosh_index
from whoosh.analysis import SpaceSeparatedTokenizer
from whoosh.fields import ID, KEYWORD, TEXT, Schema
from whoosh.support.charset import accent_map
from whoosh.writing import CLEAR

from labapp.search.index import whoosh_patches

Clause = tuple[str, str]  # ("word" | "phrase" | "prefix", text)
WORD, PHRASE, PREFIX = "word", "phrase", "prefix"

PREFIX_MIN, PREFIX_MAX = 2, 12
# Identifiers: word characters joined by - . : / + (K-12, pH7.4, E.coli, 10/20, β-actin).
_TOKEN = r"\w+(?:[-.:/+]\w+)*"
_PART = r"[-.:/+]"


class IndexUnavailable(Exception):
    """The index folder is missing or cannot be read; run ``flask --app labapp search
    rebuild``."""


class IndexBusy(Exception):
    """Another process held the index's write lock for longer than the timeout."""


_WORD = re.compile(_TOKEN)
_PARTS = re.compile(_PART)
# The text and prefix fields receive words already analysed here, joined by spaces: one pass
# of plain Python per document instead of Whoosh's token pipeline (and a second one for the
# pairs), which cost most of the indexing time.
_SPACED = SpaceSeparatedTokenizer()
_PAIR = "\u00a0"  # joins the two words of a pair; the pairs field splits on spaces only
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


def analyse(text: str) -> list[str]:
    """The words of ``text`` as searched: identifiers (``k-12``, ``ph7.4``) whole, lower
    case, accents folded (Whoosh's ``accent_map``)."""
    words = (word.lower().translate(accent_map) for word in _WORD.findall(text))
    return [word for word in words if word]


def _with_parts(words: list[str]) -> list[str]:
    """The indexed words: each identifier, then its parts (``k-12``, ``k``, ``12``)."""
    indexed = []
    for word in words:
        indexed.append(word)
        parts = [part for part in _PARTS.split(word) if part]
        if len(parts) > 1:
            indexed.extend(parts)
    return indexed


def _edges(words: list[str]) -> list[str]:
    """The edge n-grams (:data:`PREFIX_MIN`-:data:`PREFIX_MAX` characters) of ``words``."""
    return [word[:size] for word in words
            for size in range(PREFIX_MIN, min(PREFIX_MAX, len(word)) + 1)]


@dataclass(frozen=True)
class Document:
    """What the index holds of one entity. ``key_text`` (id, name, barcode) is also
    indexed for prefixes; ``text`` is everything searchable, ``key_text`` included."""

    id: str
    eclass: str
    labels: frozenset[str]
    key_text: str
    text: str


@dataclass(frozen=True)
class Hits:
    """Matches of one query: the best ``(id, score)`` pairs and how many matched."""

    items: list[tuple[str, float]]
    total: int


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


def word_pairs(words: list[str]) -> list[str]:
    return [f"{first}{_PAIR}{second}" for first, second in zip(words, words[1:], strict=False)]


def _fields(document: Document) -> dict[str, str]:
    words = analyse(document.text)
    return {"id": document.id, "eclass": document.eclass,
            "labels": " ".join(sorted(document.labels)),
            "text": " ".join(_with_parts(words)),
            "prefix": " ".join(_edges(_with_parts(analyse(document.key_text)))),
            "pairs": " ".join(word_pairs(words))}


def write(path: Path, produce: Callable[[], tuple[Iterable[Document], Iterable[str]]],
          timeout: float) -> None:
    """Take the write lock (waiting up to ``timeout`` seconds for another worker, then
    :class:`IndexBusy`), call ``produce`` for the documents to replace and the ids to
    delete, and commit them at once. ``produce`` runs under the lock, so what it reads is
    never older than what another writer has committed before."""
    index = open_index(path)
    try:
        writer = index.writer(timeout=timeout)
    except whoosh_index.LockError as error:
        raise IndexBusy("The search index is locked by another writer.") from error
    try:
        documents, deleted = produce()
        changed = False
        for entity_id in deleted:
            writer.delete_by_term("id", entity_id)
            changed = True
        for document in documents:
            writer.update_document(**_fields(document))
            changed = True
    except BaseException:
        writer.cancel()
        raise
    if not changed:
        writer.cancel()
        return
    _commit(writer)


def _commit(writer: Any, **options: Any) -> None:
    """Commit; a failed commit releases the lock (Whoosh keeps it) and raises
    :class:`IndexUnavailable`."""
    try:
        writer.commit(**options)
    except Exception as error:
        writer.cancel()
        raise IndexUnavailable(f"The search index could not be written: {error}") from error


def rebuild(path: Path, documents: Iterable[Document], timeout: float,
            progress: Callable[[int], None] | None = None) -> int:
    """Replace the whole index by ``documents``; return how many were written.

    A readable index is rewritten under its write lock (searches go on with the old
    documents until the commit); a missing or damaged one is built in a new folder that
    then takes its place.
    """
    try:
        index = open_index(path)
    except IndexUnavailable:
        return _build_fresh(path, documents, progress)
    try:
        writer = index.writer(timeout=timeout)
    except whoosh_index.LockError as error:
        raise IndexBusy("The search index is locked by another writer.") from error
    try:
        count = _add_all(writer, documents, progress)
    except BaseException:
        writer.cancel()
        raise
    _commit(writer, mergetype=CLEAR, optimize=True)
    return count


def _add_all(writer: Any, documents: Iterable[Document],
             progress: Callable[[int], None] | None) -> int:
    count = 0
    for document in documents:
        writer.add_document(**_fields(document))
        count += 1
        if progress is not None:
            progress(1)
    return count


def _build_fresh(path: Path, documents: Iterable[Document],
                 progress: Callable[[int], None] | None) -> int:
    staging = path.with_name(path.name + ".new")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    whoosh_patches.apply()
    index = whoosh_index.create_in(str(staging), SCHEMA)
    writer = index.writer()
    try:
        count = _add_all(writer, documents, progress)
    except BaseException:
        writer.cancel()
        shutil.rmtree(staging, ignore_errors=True)
        raise
    writer.commit(optimize=True)
    if path.exists():
        retired = path.with_name(path.name + ".old")
        shutil.rmtree(retired, ignore_errors=True)
        os.replace(path, retired)
        os.replace(staging, path)
        shutil.rmtree(retired, ignore_errors=True)
    else:
        os.replace(staging, path)
    return count
