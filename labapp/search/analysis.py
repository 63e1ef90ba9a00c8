"""What every search backend shares: documents, clauses, hits, and the analysis that turns
text into the words a document is found by.

Text is tokenised for lab identifiers: ``SAM00042``, ``K-12``, ``pH7.4``, ``β-actin`` stay
whole, and their parts (``k``, ``12``, ``ph7``, ``4``) are indexed too, so both the
identifier and its parts are found. Case and accents are folded (:mod:`labapp.search.accents`).
Phrases are matched as their adjacent word pairs, so no positions are stored or read; the
id, name and barcode words also give their edge n-grams (``prefix``), so ``sam*`` can be one
term. Queries arrive already parsed (:data:`Clause`: ``("word"|"phrase"|"prefix", text)``,
AND-ed) and each backend answers them as ``(entity id, score)`` pairs plus a total
(:class:`Hits`).
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from labapp.search.accents import ACCENT_MAP

Clause = tuple[str, str]  # ("word" | "phrase" | "prefix", text)
WORD, PHRASE, PREFIX = "word", "phrase", "prefix"
PREFIX_MIN, PREFIX_MAX = 2, 12
# A search matching more documents than this is not ranked by either backend: its first
# matches come back unscored (ranking every match of a word in half of 10^6 documents costs
# far more than the search).
COMMON = 5000
# Matches a backend that cannot count them cheaply counts at most (its total is then a lower
# bound): what a person reads as "10,000 or more".
COUNTED = 10_000
# Identifiers: word characters joined by - . : / + (K-12, pH7.4, E.coli, 10/20, β-actin).
_WORD = re.compile(r"\w+(?:[-.:/+]\w+)*")
_PARTS = re.compile(r"[-.:/+]")
PAIR = "\u00a0"  # joins the two words of a pair (no analysed word holds it)
PART = "\x1f"  # separates the parts of a document's text (the unit separator)


class IndexUnavailable(Exception):
    """The search index is missing or cannot be read; run ``flask --app labapp search
    rebuild``."""


class IndexBusy(Exception):
    """Another process held the index's write lock for longer than the timeout."""


@dataclass(frozen=True)
class Document:
    """What a backend holds of one entity. ``key_text`` (id, name, barcode) is also
    indexed for prefixes; ``text`` is everything searchable, ``key_text`` included, its
    parts joined by :data:`PART` (:func:`text_of`)."""

    id: str
    eclass: str
    labels: frozenset[str]
    key_text: str
    text: str


@dataclass(frozen=True)
class Hits:
    """Matches of one query: the best ``(id, score)`` pairs and how many matched (``exact``
    False: at least that many, a backend that stops counting at :data:`COUNTED`)."""

    items: list[tuple[str, float]]
    total: int
    exact: bool = True


@dataclass(frozen=True)
class Words:
    """The analysed words of one document: ``text`` (each word, then its parts),
    ``prefixes`` (edge n-grams of the key words) and ``pairs`` (adjacent words, joined by
    :data:`PAIR`)."""

    text: list[str]
    prefixes: list[str]
    pairs: list[str]
    keys: int = 0  # how many of ``text``'s first words are the key words (id, name, barcode)


def analyse(text: str) -> list[str]:
    """The words of ``text`` as searched: identifiers (``k-12``, ``ph7.4``) whole, lower
    case, accents folded."""
    words = []
    for word in _WORD.findall(text):
        word = word.lower()
        # ASCII needs no folding (the table maps lower-case ASCII letters to themselves).
        if not word.isascii():
            word = word.translate(ACCENT_MAP)
            if not word:
                continue
        words.append(word)
    return words


def with_parts(words: list[str]) -> list[str]:
    """The indexed words: each identifier, then its parts (``k-12``, ``k``, ``12``)."""
    indexed = []
    for word in words:
        indexed.append(word)
        if word.isalnum():  # most words: nothing to split
            continue
        parts = [part for part in _PARTS.split(word) if part]
        if len(parts) > 1:
            indexed.extend(parts)
    return indexed


def edges(words: list[str]) -> list[str]:
    """The edge n-grams (:data:`PREFIX_MIN`-:data:`PREFIX_MAX` characters) of ``words``,
    each shorter than its word. The whole word needs none: a prefix query also expands its
    stem among the text words, where the word itself comes first. Ids, barcodes and numbers
    are words of their own, so their whole-word n-grams were a third of the terms a drain
    wrote."""
    return [word[:size] for word in words
            for size in range(PREFIX_MIN, min(PREFIX_MAX + 1, len(word)))]


def word_pairs(words: list[str]) -> list[str]:
    """The adjacent pairs of ``words``, each joined by :data:`PAIR`."""
    return [f"{first}{PAIR}{second}" for first, second in zip(words, words[1:], strict=False)]


def text_of(values: Iterable[Any]) -> str:
    """One searchable text of ``values`` (an entity's id, name, description, attribute
    values...), each kept a part of its own: phrases match within a part, not across two."""
    return PART.join(str(value) for value in values if value not in (None, ""))


def words_of(document: Document, *, prefixes: bool = True) -> Words:
    """The words ``document`` is found by, as every backend stores them (``prefixes``:
    with the key words' edge n-grams, which a backend that expands prefixes itself does
    not store)."""
    parts = [analyse(part) for part in document.text.split(PART)]
    keys = with_parts(analyse(document.key_text))
    return Words(text=with_parts([word for words in parts for word in words]),
                 prefixes=edges(keys) if prefixes else [],
                 pairs=[pair for words in parts for pair in word_pairs(words)],
                 keys=len(keys))


@dataclass(frozen=True)
class Terms:
    """What one clause asks for, as every backend reads it: all of ``pairs`` (a phrase, or
    a word the analyser splits), one ``word`` of the text, or a ``stem`` that text words
    start with (also one of the key words' n-grams when ``ngram``). ``nothing``: the
    clause can match no document."""

    word: str | None = None
    pairs: tuple[str, ...] = ()
    stem: str | None = None
    ngram: bool = False

    @property
    def nothing(self) -> bool:
        return self.word is None and not self.pairs and self.stem is None


def terms_of(kind: str, text: str) -> Terms:
    """The :class:`Terms` of one clause."""
    words = analyse(text)
    if not words:
        return Terms()
    if kind == PREFIX:
        stem = words[0] if len(words) == 1 else " ".join(words)
        return Terms(stem=stem, ngram=PREFIX_MIN <= len(stem) <= PREFIX_MAX)
    if len(words) == 1:
        return Terms(word=words[0])
    return Terms(pairs=tuple(word_pairs(words)))
