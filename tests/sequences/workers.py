"""Code run in the child processes of the concurrency tests (spawned: importable, no pytest)."""
from __future__ import annotations

import traceback
from collections.abc import Mapping, Sequence
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from typing import Any

from labapp import create_app
from labapp.db import db, transaction
from labapp.sequences.service import next_ids

BARRIER_TIMEOUT_S = 60


def draw_in_process(settings: Mapping[str, Any], sequence_id: str, blocks: Sequence[int],
                    start: Barrier, results: Queue) -> None:
    """Build an application on ``settings``, wait for every other process, then draw one
    block of values per transaction; put ``("ok", values)`` or ``("error", traceback)``."""
    try:
        app = create_app(settings)
        drawn: list[str] = []
        with app.app_context():
            start.wait(BARRIER_TIMEOUT_S)
            for count in blocks:
                with transaction():
                    drawn.extend(next_ids(sequence_id, count))
            db.session.remove()
            db.engine.dispose()
        results.put(("ok", drawn))
    except BaseException:
        results.put(("error", traceback.format_exc()))
        raise
