"""The long-running processes that serve: gunicorn's settings module and the start-up freeze.

``make run`` starts gunicorn with ``-c python:labapp.serving``; gunicorn reads the hooks
below from this module (command-line options still win). The background worker
(``labapp/worker.py``) calls :func:`freeze_start_up` itself.
"""
from __future__ import annotations

import gc
from typing import Any


def freeze_start_up() -> int:
    """Collect the start-up's garbage, then move every object left (modules, classes, the
    app, mappers, the data-model registry: ~150,000 of them) out of the garbage collector's
    reach; returns how many were frozen.

    They live as long as the process, yet each full collection walked them all (~80 ms,
    landing in one request every few dozen, bench/runs/2026-11-23-search-2.md). Frozen, a
    collection walks only what requests made since. Call it once a process has loaded the
    app and before it serves, never in ``create_app`` (tests build many apps in one
    process).
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def post_worker_init(worker: Any) -> None:
    """gunicorn's hook, run in each worker once it has loaded the app (``worker.wsgi``)."""
    frozen = freeze_start_up()
    worker.log.info("Worker %s: %s start-up objects frozen out of garbage collection",
                    worker.pid, f"{frozen:,}")
