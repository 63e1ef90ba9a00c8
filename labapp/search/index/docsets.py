"""Sets of document numbers as bitmaps: one Python ``int`` whose bit ``n`` is document ``n``.

The searcher keeps sets per index generation (a caller's visible documents, a common term's,
a prefix's matches). As Python sets of up to 100,000 numbers they took ~7 MB each, and every
full garbage collection walked each of their elements: a process holding a few dozen spent
100-160 ms in one collection, in the middle of some request. A bitmap of 100,000 documents is
12.5 KB, its unions, intersections and counts run in C over machine words, and the garbage
collector never looks into an ``int``.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator

from whoosh.idsets import DocIdSet


def _bits_of(docnums: Iterable[int], size: int) -> int:
    buffer = bytearray((size + 7) // 8)
    for docnum in docnums:
        buffer[docnum >> 3] |= 1 << (docnum & 7)
    return int.from_bytes(buffer, "little")


class DocSet(DocIdSet):  # type: ignore[misc]  # whoosh ships no type information
    """An immutable set of document numbers over one ``int``; Whoosh takes it as a search
    filter (a :class:`~whoosh.idsets.DocIdSet`)."""

    __slots__ = ("bits", "_bytes")

    def __init__(self, bits: int = 0) -> None:
        self.bits = bits
        self._bytes: bytes | None = None

    @classmethod
    def of(cls, docnums: Iterable[int], size: int) -> DocSet:
        """The set of ``docnums``, each below ``size`` (the index's document count)."""
        return cls(_bits_of(docnums, size))

    def __len__(self) -> int:
        return self.bits.bit_count()

    def __bool__(self) -> bool:
        return self.bits != 0

    def __and__(self, other: DocSet) -> DocSet:
        return DocSet(self.bits & other.bits)

    def __or__(self, other: DocSet) -> DocSet:
        return DocSet(self.bits | other.bits)

    def _as_bytes(self) -> bytes:
        """The bits as bytes, low first (made once: looking a bit up in the int would shift
        all of it)."""
        if self._bytes is None:
            self._bytes = self.bits.to_bytes((self.bits.bit_length() + 7) // 8, "little")
        return self._bytes

    def __contains__(self, docnum: object) -> bool:
        if not isinstance(docnum, int) or docnum < 0:
            return False
        data, byte = self._as_bytes(), docnum >> 3
        return byte < len(data) and bool(data[byte] >> (docnum & 7) & 1)

    def smallest(self, count: int) -> list[int]:
        """The ``count`` smallest document numbers, ascending."""
        found: list[int] = []
        rest = self.bits
        while rest and len(found) < count:
            lowest = rest & -rest
            found.append(lowest.bit_length() - 1)
            rest ^= lowest
        return found

    def __iter__(self) -> Iterator[int]:
        for byte, value in enumerate(self._as_bytes()):
            while value:
                lowest = value & -value
                yield byte * 8 + lowest.bit_length() - 1
                value ^= lowest
