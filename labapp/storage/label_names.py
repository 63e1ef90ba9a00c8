"""What a label prints for a name: one clean line of text, shortened to what the label holds
so that the labels printed together stay apart.

A name is first made printable (:func:`printable`): control characters and the Unicode
controls that reorder text (a right-to-left override would print ``evil end`` as
``dne live``) are dropped, line breaks and tabs become spaces. A name wider than the label's
room is cut from the middle (:func:`shorten`), its start and its end kept around one ``…``:
names of a series differ at the end (``…P-0017``, ``…P-0018``). Names printed together that
would still print alike show the words where they differ, with their start and end as
room allows (:func:`distinct`). Widths count a wide character (CJK, most emoji) as two and
a combining mark as none, and no cut separates a character from the marks or joined
characters that belong to it.
"""
from __future__ import annotations

import os.path
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Sequence

ELLIPSIS = "…"
_ZWJ = "\u200d"  # joins emoji into one picture (👩‍🔬)
# Embeddings, overrides and isolates: they would reorder the label's own text.
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_MARKS = frozenset(("Mn", "Mc", "Me"))
_SKIN_TONES = ("\U0001f3fb", "\U0001f3ff")
# At most this many characters of the word where names differ are shown either side of the
# difference (``P-0017``, not ``…7``).
_CONTEXT = 6
# Rounds of telling names apart; each round shows one more place where they differ, and
# names alike in more places than that are alike in more than a label can show.
_ROUNDS = 8


def printable(name: str) -> str:
    """``name`` as one line a label can print: control characters and bidirectional
    embeddings, overrides and isolates dropped, any run of white space (tabs and line
    breaks included) one space, none at the ends."""
    kept = []
    for char in name:
        if char in _BIDI_CONTROLS:
            continue
        if unicodedata.category(char) == "Cc" and not char.isspace():
            continue
        kept.append(char)
    return " ".join("".join(kept).split())


def char_width(char: str) -> int:
    """How many columns ``char`` takes: 2 for a wide character, 0 for a combining mark or
    a joiner, else 1."""
    if unicodedata.category(char) in _MARKS or char == _ZWJ:
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def width(text: str) -> int:
    """The columns ``text`` takes (:func:`char_width` of each character)."""
    return sum(char_width(char) for char in text)


def _fits(text: str, limit: int) -> bool:
    """Whether ``text`` is at most ``limit`` columns wide (reading no further than that)."""
    taken = 0
    for char in text:
        taken += char_width(char)
        if taken > limit:
            return False
    return True


def _joins_previous(text: str, index: int) -> bool:
    """Whether the character at ``index`` belongs to the one before it (a mark, a skin tone,
    or anything after a joiner)."""
    char = text[index]
    return (unicodedata.category(char) in _MARKS or _SKIN_TONES[0] <= char <= _SKIN_TONES[1]
            or char == _ZWJ or text[index - 1] == _ZWJ)


def _head(text: str, room: int) -> str:
    """The longest start of ``text`` at most ``room`` columns wide that ends between two
    characters that do not belong together."""
    end = taken = 0
    while end < len(text) and taken + char_width(text[end]) <= room:
        taken += char_width(text[end])
        end += 1
    while 0 < end < len(text) and _joins_previous(text, end):
        end -= 1
    return text[:end]


def _tail(text: str, room: int) -> str:
    """The longest end of ``text`` at most ``room`` columns wide that starts on a character
    that does not belong to the one before it."""
    start, taken = len(text), 0
    while start > 0 and taken + char_width(text[start - 1]) <= room:
        taken += char_width(text[start - 1])
        start -= 1
    while 0 < start < len(text) and _joins_previous(text, start):
        start += 1
    return text[start:]


def shorten(text: str, limit: int) -> str:
    """``text`` cut from the middle to at most ``limit`` (≥ 1) columns: its start and its
    end survive around one ``…``, the end keeping the odd column, as it is where names of a
    series differ (``pLentiCRISPRv2-sgRNA-BRCA1-clone7`` → ``pLentiCRI…A1-clone7`` for 19).
    A text that fits is returned unchanged."""
    if limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")
    if _fits(text, limit):
        return text
    head = (limit - 1) // 2
    return _head(text, head) + ELLIPSIS + _tail(text, limit - 1 - head)


def _word(name: str, at: int) -> tuple[int, int]:
    """The span of ``name`` shown for a difference at index ``at``: the word that holds it,
    at most :data:`_CONTEXT` characters either side of it (``P-0017``, not ``…7``)."""
    begin, end = at, at + 1
    while begin > 0 and at - begin < _CONTEXT and not name[begin - 1].isspace():
        begin -= 1
    while end < len(name) and end - at <= _CONTEXT and not name[end].isspace():
        end += 1
    while begin > 0 and _joins_previous(name, begin):
        begin -= 1
    while end < len(name) and _joins_previous(name, end):
        end += 1
    return begin, end


def _merged(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` (begin, end) in order, those that overlap or touch made one."""
    merged: list[tuple[int, int]] = []
    for begin, end in sorted(spans):
        if merged and begin <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((begin, end))
    return merged


def _showing(name: str, kept: set[int], limit: int) -> str:
    """``name`` in at most ``limit`` columns showing the words that hold the indexes
    ``kept`` and, as room allows, its start and its end, with ``…`` for what is left out."""
    words = _merged(_word(name, min(at, len(name) - 1)) for at in kept)
    room = limit - sum(width(name[begin:end]) for begin, end in words) - len(words) - 1
    start = _head(name[:words[0][0]], max(room, 0) // 2).rstrip()
    end = _tail(name[words[-1][1]:], max(room - width(start), 0)).lstrip()
    spans = _merged([*words, (0, len(start)), (len(name) - len(end), len(name))])
    spans = [(begin, end) for begin, end in spans if begin < end]
    text = ELLIPSIS.join(name[begin:end] for begin, end in spans)
    text = (ELLIPSIS if spans[0][0] > 0 else "") + text
    text += ELLIPSIS if spans[-1][1] < len(name) else ""
    return shorten(text, limit)  # the words alone may be wider than the label


def _next_difference(group: Sequence[str], at: int) -> int | None:
    """The first index from ``at`` on where the names of ``group`` do not all agree (one
    having ended counts as a difference); None when there is none."""
    for index in range(at, max(len(name) for name in group)):
        if len({name[index:index + 1] for name in group}) > 1:
            return index
    return None


def distinct(names: Sequence[str], limit: int) -> list[str]:
    """Each of ``names`` shortened to at most ``limit`` columns (:func:`shorten`), so that
    different names print differently: names that would print alike show the words where
    they differ and, as room allows, their start and their end (``Visit 3, P-0017, plasma,
    aliquot 1 of 4, left freezer`` and ``…P-0018…`` in 23 columns: ``Visit 3…P-0017,…freezer``
    and ``Visit 3…P-0018,…freezer``). Equal names print equally."""
    printed = {name: shorten(name, limit) for name in names}
    kept: defaultdict[str, set[int]] = defaultdict(set)
    for _ in range(_ROUNDS):
        alike: defaultdict[str, list[str]] = defaultdict(list)
        for name, text in printed.items():
            alike[text].append(name)
        clashes = [group for group in alike.values() if len(group) > 1]
        if not clashes:
            break
        for group in clashes:
            at = _next_difference(group, len(os.path.commonprefix(group)))
            while at is not None and all(at in kept[name] for name in group):
                at = _next_difference(group, at + 1)
            if at is None:
                continue
            for name in group:
                kept[name].add(at)
                printed[name] = _showing(name, kept[name], limit)
    return [printed[name] for name in names]
