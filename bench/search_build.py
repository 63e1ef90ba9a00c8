"""Search index build and drain rates at size (issue 24):
``python -m bench.search_build --documents 100000 --backend sqlite|postgresql``.

On a fresh database (``bench.harness.open_bench``), ``--documents`` Samples are seeded through
Core with the text of ``bench/search.py``; then
1. ``search rebuild`` is timed (:func:`measure_rebuild`: the whole of
   :func:`labapp.search.rebuild.rebuild_index` in an application context — reading the
   database, indexing, the commit and the queue bookkeeping), in documents/s;
2. ``--changed`` entities are changed through Core (one ``UPDATE``; the triggers queue them)
   and the drain of that queue into the index is timed (:func:`measure_drain`).
Both functions take an already seeded :class:`~bench.harness.Bench`, so other benchmarks
(``bench/million.py``) can call them.
"""
from __future__ import annotations

import argparse
import os
import resource
import time
from collections.abc import Callable

from sqlalchemy import func, select, update

from bench.harness import Bench, open_bench
from bench.search import seed
from labapp.db import db
from labapp.model import Entity, SearchQueue
from labapp.search import indexer
from labapp.search.rebuild import rebuild_index

Log = Callable[[str], None]


def _cpu() -> tuple[float, float]:
    """CPU seconds of this process and of its finished children (the index's workers)."""
    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                          resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def _cpu_since(before: tuple[float, float]) -> str:
    own, children = (after - start for after, start in zip(_cpu(), before, strict=True))
    return f"{own + children:.1f} CPU s: {own:.1f} this process, {children:.1f} workers"


def _load() -> str:
    return " ".join(f"{load:.2f}" for load in os.getloadavg())


def _count(bench: Bench) -> int:
    with bench.app.app_context():
        try:
            return db.session.scalar(select(func.count()).select_from(Entity)) or 0
        finally:
            db.session.remove()


def measure_rebuild(bench: Bench, log: Log = print) -> float:
    """Seconds of one ``search rebuild`` (database read + index + commit) of every entity."""
    with bench.app.app_context():
        try:
            start, cpu = time.perf_counter(), _cpu()
            count = rebuild_index()
            seconds, cpu_used = time.perf_counter() - start, _cpu_since(cpu)
        finally:
            db.session.remove()
    log(f"  rebuild: {count:,} documents in {seconds:.1f} s ({count / seconds:,.0f}/s; "
        f"{cpu_used}; load {_load()}; peak RSS of a worker, pages shared with this "
        "process included, "
        f"{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:,.0f} MiB)")
    return seconds


def _change(bench: Bench, changed: int) -> None:
    """Change the description of ``changed`` entities (spread over the id range) through
    Core, so the triggers queue them."""
    total = _count(bench)
    step = max(1, total // changed)
    with bench.engine.connect() as connection:
        ids = list(connection.scalars(select(Entity.id).order_by(Entity.id)))[::step][:changed]
        for start in range(0, len(ids), 5000):
            connection.execute(update(Entity).where(Entity.id.in_(ids[start:start + 5000]))
                               .values(description=Entity.description + " changed"))
        connection.commit()


def measure_drain(bench: Bench, changed: int, log: Log = print) -> float:
    """Documents/s of draining a queue of ``changed`` changed entities into the existing
    index (which must have been built, e.g. by :func:`measure_rebuild`)."""
    _change(bench, changed)
    with bench.app.app_context():
        try:
            waiting = db.session.scalar(select(func.count()).select_from(SearchQueue)) or 0
            db.session.rollback()
            start, cpu = time.perf_counter(), _cpu()
            done = indexer.drain()
            seconds, cpu_used = time.perf_counter() - start, _cpu_since(cpu)
        finally:
            db.session.remove()
    rate = done / seconds
    log(f"  drain: {done:,} of {waiting:,} queued changes in {seconds:.1f} s ({rate:,.0f}/s; "
        f"{cpu_used}; load {_load()})")
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--changed", type=int, default=50_000)
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    options = parser.parse_args()
    os.environ.setdefault("LABAPP_TEST_POSTGRES_URL",
                          "postgresql+psycopg://postgres@127.0.0.1:5432/test")
    print(f"[{options.backend}] {options.documents:,} samples; load {_load()}")
    with open_bench(options.backend) as bench:
        seed(bench, options.documents, print)
        measure_rebuild(bench)
        if options.changed:
            measure_drain(bench, options.changed)
    print(f"load at end {_load()}")


if __name__ == "__main__":
    main()
