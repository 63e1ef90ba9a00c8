"""Streams for tests of storing large contents: made on the fly, never whole in memory."""
from __future__ import annotations

import hashlib


class Pieces:
    """A stream of ``size`` pseudo-random bytes made on the fly (never whole in memory),
    in reads of odd sizes; it fails with OSError after ``fail_after`` bytes, when given."""

    def __init__(self, size: int, fail_after: int | None = None) -> None:
        self.size, self.fail_after = size, fail_after
        self.sent = 0
        self.digest = hashlib.sha256()

    def read(self, size: int = -1, /) -> bytes:
        if self.fail_after is not None and self.sent >= self.fail_after:
            raise OSError("the client went away")
        wanted = min(self.size - self.sent, 300_001 if size < 0 else min(size, 300_001))
        block = hashlib.sha256(str(self.sent).encode()).digest() * (wanted // 32 + 1)
        block = block[:wanted]
        self.sent += len(block)
        self.digest.update(block)
        return block
