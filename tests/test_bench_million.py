"""The million bench's diagnostics (the run itself is not part of ``make test``)."""
from __future__ import annotations

import gc

from bench.million import full_collections


def test_full_collections_records_each_full_collection_inside_the_block() -> None:
    pauses: list[float] = []
    with full_collections(pauses):
        gc.collect(0)
        gc.collect()
        gc.collect(2)
    gc.collect()
    assert len(pauses) == 2
    assert all(pause >= 0 for pause in pauses)
    assert all(callback.__name__ != "watch" for callback in gc.callbacks)
