"""What one Whoosh backend keeps across index generations, in its own instance (no module
globals): the searcher of its index's latest generation with the sets computed on it, the
bitmaps of segments' common terms, the id range of each segment and each segment's table of
bitmaps. Segments never change once written, so what is kept by segment id stays true."""
from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any


class Kept:
    """The caches of the index in ``path`` (each behind its own lock: readers of several
    threads share them)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.Lock()  # the searcher and the segment sets
        self.searcher: Any = None  # searching._Cached of the latest generation, or None
        self.segment_sets: OrderedDict[tuple[str, str, str], int] = OrderedDict()
        self.ranges_lock = threading.Lock()
        self.ranges: OrderedDict[str, tuple[bytes, bytes] | None] = OrderedDict()
        self.tables_lock = threading.Lock()
        self.tables: OrderedDict[str, Any] = OrderedDict()

    def clear(self) -> None:
        """Forget everything kept but the searcher (the caller closes that)."""
        with self.lock:
            self.segment_sets.clear()
        with self.ranges_lock:
            self.ranges.clear()
        with self.tables_lock:
            self.tables.clear()
