"""The two search backends side by side on PostgreSQL (issue 34 §4):
``python -m bench --search-backends whoosh,postgresql [--entities 1000000]``.

Per search backend (``LABAPP_SEARCH_BACKEND``) a fresh app and PostgreSQL database, all open
at once (the backends' builds and writes run one after the other, their queries take turns
request by request, so other load on the machine falls on both alike);
``--entities`` Samples (default 100,000) seeded through Core with the text of
``bench/search.py``, then ``VACUUM ANALYZE`` (standing in for autovacuum, which since
PostgreSQL 13 also vacuums after bulk inserts, setting the visibility map a count reads);
1. ``search rebuild`` timed (:func:`bench.search_build.measure_rebuild`), then ``VACUUM
   ANALYZE`` again (the PostgreSQL backend's table was just filled);
2. p50/p95/max of every query kind of ``bench/search.py`` through ``GET /api/search/...`` as
   a reader whose access filter applies, plus the merged search (``GET /api/search/<term>``:
   exact, like and full text in one request);
3. incremental indexing: ``--changed`` entities changed through Core (the triggers queue
   them), the drain of that queue timed (:func:`bench.search_build.measure_drain`);
4. the write cost of indexing on bulk create: ``POST /api/entity`` of 500 Samples, taking
   turns in three states, the queue emptied before every timed batch (``--bulk-rounds``
   rounds of ``batches`` batches per state).
   PostgreSQL backend: on = the documents written in the request's transaction (as served),
   off = the unit of work's indexing hooks detached. Whoosh backend: on = the indexer worker
   (``flask --app labapp search worker``) indexes beside the requests, as ``make run`` serves;
   off = the worker paused (SIGSTOP) and the inline drain detached. "Off" also disables the
   search-queue triggers (no search work at all: the target's "without"); "off, queued"
   keeps them, as runs before 2026-11-29 02:30 measured "off";
5. freshness: a 500-entity POST returned → all 500 found by full text (Whoosh: the worker
   running; PostgreSQL: no worker, none is needed).
Targets (issue 34): PostgreSQL backend rebuild of 10^6 < 5 min, every kind p95 < 50 ms at
10^6, bulk create with indexing ≥ 80% of without. A run of fewer entities states them
against its own size and a linear projection of the rebuild.
"""
from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field

from sqlalchemy import text

from bench.harness import Bench, fresh_tokens, open_bench
from bench.search import (
    RUNS,
    WARMUP,
    Latency,
    _body,
    _post,
    freshness,
    kinds,
    seed,
    session_hooks,
)
from bench.search_build import measure_drain, measure_rebuild
from bench.serving import indexer_worker, wait_until, worker_alive
from labapp.db import db
from labapp.search import backend, indexer

TOPIC, TITLE = "search-backends", "Search backends side by side (issue 34 §4)"
BULK_TOPIC, BULK_TITLE = ("search-backends-bulk", "Bulk create with search indexing on and "
                          "off, both search backends (issue 34 §4)")
BACKENDS = ("whoosh", "postgresql")
MILLION = 1_000_000
TARGET_REBUILD = 300.0  # seconds, PostgreSQL backend, at 10^6
TARGET_P95 = 0.050
TARGET_BULK = 0.80
Log = Callable[[str], None]


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


# Kinds answered in SQL on the entity table, never by a search backend: their differences
# between the two runs are noise, not the backends'.
SQL_ONLY = frozenset({"exact (barcode)", "like (name part)"})


def all_kinds(total: int) -> dict[str, Callable[[int], tuple[str, str]]]:
    """``bench/search.py``'s kinds and the merged search of a name part."""
    table = kinds(total)
    table["merged (name part)"] = lambda r: (f"{(r * 7919) % total:06d}", "")
    return table


@dataclass
class BackendRun:
    """What one search backend measured."""

    name: str
    entities: int
    seed_seconds: float = 0.0
    rebuild_seconds: float = 0.0
    drain_rate: float = 0.0
    changed: int = 0
    api: dict[str, Latency] = field(default_factory=dict)
    bulk: list[BulkRound] = field(default_factory=list)
    fresh: list[float] = field(default_factory=list)
    stored_bytes: int | None = None
    loads: list[str] = field(default_factory=list)

    @property
    def rate_on(self) -> float:
        return _rate(self.bulk, "on")

    @property
    def rate_off(self) -> float:
        return _rate(self.bulk, "off")

    @property
    def rate_off_queued(self) -> float:
        return _rate(self.bulk, "off, queued")

    @property
    def bulk_ratio(self) -> float:
        """Indexing on against no search work at all, every round's batches together."""
        return self.rate_on / self.rate_off

    @property
    def bulk_spread(self) -> str:
        """Each round's ratio (on against off), lowest to highest."""
        return ", ".join(f"{ratio:.0%}" for ratio in sorted(
            bulk.rate("on") / bulk.rate("off") for bulk in self.bulk))

    @property
    def worst_p95(self) -> float:
        return max(latency.p(0.95) for latency in self.api.values())


BULK_STATES = ("on", "off", "off, queued")


@dataclass
class BulkRound:
    """Seconds of each 500-entity POST of one round, per state of :data:`BULK_STATES`."""

    seconds: dict[str, list[float]] = field(
        default_factory=lambda: {state: [] for state in BULK_STATES})

    def rate(self, state: str) -> float:
        return 500 * len(self.seconds[state]) / sum(self.seconds[state])


def _rate(rounds: list[BulkRound], state: str) -> float:
    times = [seconds for bulk in rounds for seconds in bulk.seconds[state]]
    return 500 * len(times) / sum(times) if times else 0.0


def _vacuum(bench: Bench) -> None:
    """What autovacuum does after a bulk insert: statistics and the visibility map."""
    with bench.engine.connect() as connection:
        connection.execution_options(isolation_level="AUTOCOMMIT").execute(
            text("VACUUM ANALYZE"))


_HOOKS = (("after_flush", indexer._after_flush), ("do_orm_execute", indexer._on_execute),
          ("before_commit", indexer._before_commit))


def _indexing(on: bool) -> None:
    """Attach or detach the unit of work's indexing hooks (the queue triggers stay)."""
    session_hooks(_HOOKS, on)


def _queue_length(bench: Bench) -> int:
    with bench.app.app_context():
        try:
            return indexer.queue_length()
        finally:
            db.session.remove()


def _drain_here(bench: Bench) -> None:
    with bench.app.app_context():
        try:
            indexer.drain()
        finally:
            db.session.remove()


@contextmanager
def _worker_if_whoosh(bench: Bench, name: str) -> Iterator[object | None]:
    if name != "whoosh":
        yield None
        return
    with indexer_worker(bench, statistics=False) as worker:
        yield worker


_QUEUE_TRIGGERS = (("entity", "search_queue_entity"), ("note", "search_queue_note"),
                   ("file", "search_queue_file"))


def _queue_triggers(bench: Bench, on: bool) -> None:
    """Enable or disable the search-queue triggers (between timed batches only)."""
    with bench.engine.begin() as connection:
        connection.execute(text("SET LOCAL lock_timeout = '60s'"))
        for table, trigger in _QUEUE_TRIGGERS:
            connection.execute(text(f"ALTER TABLE {table} {'ENABLE' if on else 'DISABLE'} "
                                    f"TRIGGER {trigger}"))


def bulk_rates(bench: Bench, name: str, batches: int) -> BulkRound:
    """Seconds of 500-entity POSTs in each state of :data:`BULK_STATES`, taking turns (each
    batch begins in another state), each batch starting from an empty queue."""
    measured = BulkRound()
    with _worker_if_whoosh(bench, name) as worker:
        def settle() -> None:
            _indexing(True)
            if worker is None:
                _drain_here(bench)
            else:
                worker.send_signal(signal.SIGCONT)  # type: ignore[attr-defined]
                wait_until(lambda: _queue_length(bench) == 0, "the queue to drain", 600)

        try:
            for batch in range(batches):
                turn = batch % len(BULK_STATES)
                for state in BULK_STATES[turn:] + BULK_STATES[:turn]:
                    settle()
                    indexing = state == "on"
                    # Before the worker is paused: a paused worker may hold a lock the
                    # triggers' ALTER TABLE waits for.
                    if state == "off":
                        _queue_triggers(bench, False)
                    if worker is not None:
                        if not indexing:
                            worker.send_signal(signal.SIGSTOP)  # type: ignore[attr-defined]
                        else:
                            wait_until(lambda: worker_alive(bench), "the worker's heartbeat")
                    _indexing(indexing)
                    try:
                        measured.seconds[state].append(
                            _post(bench, _body(bench, f"bulk{batch}{turn}{state[:3]}", 500)))
                    finally:
                        if state == "off":
                            if worker is not None:
                                worker.send_signal(signal.SIGCONT)  # type: ignore[attr-defined]
                            _queue_triggers(bench, True)
            settle()
        finally:
            _indexing(True)
            if worker is not None:
                worker.send_signal(signal.SIGCONT)  # type: ignore[attr-defined]
    return measured


def _timed_get(bench: Bench, path: str) -> float:
    start = time.perf_counter()
    response = bench.client.get(f"/api/search/{path}", headers=bench.reader_headers)
    elapsed = time.perf_counter() - start
    if response.status_code != 200:
        raise RuntimeError(f"{path}: {response.status_code} {response.get_data()[:300]!r}")
    return elapsed


def latencies(benches: dict[str, Bench], entities: int, runs: int) -> dict[str, dict[str,
                                                                                     Latency]]:
    """Backend → kind → latency, the backends taking turns request by request (so load
    from other work on the machine falls on both alike)."""
    found: dict[str, dict[str, Latency]] = {name: {} for name in benches}
    for kind, make in all_kinds(entities).items():
        for name in benches:
            found[name][kind] = Latency()
        for number in range(-WARMUP, runs):
            for name, bench in benches.items():
                elapsed = _timed_get(bench, make(number)[0])
                if number >= 0 or number == -WARMUP:  # the cold run counts for the maximum
                    found[name][kind].times.append(elapsed)
    return found


def run_all(names: list[str], entities: int, *, runs: int = RUNS, batches: int = 10,
            changed: int = 50_000, bulk_rounds: int = 1, bulk_only: bool = False,
            log: Log = print) -> list[BackendRun]:
    """Every measure of each search backend of ``names``, each on a fresh PostgreSQL
    database of its own, all open at once: building and writing one backend after the
    other, the queries taking turns. ``bulk_only``: seeding, rebuild and the bulk create
    (``bulk_rounds`` rounds, the backends taking turns round by round) only."""
    results = {name: BackendRun(name, entities) for name in names}
    with ExitStack() as stack:
        benches = {name: stack.enter_context(open_bench("postgresql", {"SEARCH_BACKEND": name}))
                   for name in names}
        for name, bench in benches.items():
            result = results[name]
            log(f"[{name} backend on postgresql] {entities:,} samples; load {_load()}")
            begin = time.perf_counter()
            seed(bench, entities, log)
            _vacuum(bench)
            result.seed_seconds = time.perf_counter() - begin
            result.loads.append(f"after seeding {_load()}")
            result.rebuild_seconds = measure_rebuild(bench, log)
            _vacuum(bench)
            result.loads.append(f"after rebuild {_load()}")
        if not bulk_only:
            log(f"queries, the backends taking turns; load {_load()}")
            for name, found in latencies(benches, entities, runs).items():
                results[name].api = found
                for kind, latency in found.items():
                    log(f"  [{name}] API {kind}: p50/p95/max {latency.row()} ms")
                results[name].loads.append(f"after queries {_load()}")
        for bench in benches.values():
            fresh_tokens(bench)
        for round_ in range(bulk_rounds):
            for name, bench in benches.items():
                result = results[name]
                if round_ == 0 and not bulk_only:
                    log(f"[{name} backend] writes; load {_load()}")
                    result.changed = min(changed, entities // 2)
                    result.drain_rate = measure_drain(bench, result.changed, log)
                    result.loads.append(f"after drain {_load()}")
                bulk = bulk_rates(bench, name, batches)
                result.bulk.append(bulk)
                log(f"  [{name}] bulk create, round {round_ + 1}: "
                    + ", ".join(f"{bulk.rate(state):,.0f}/s {state}" for state in BULK_STATES)
                    + f" ({bulk.rate('on') / bulk.rate('off'):.0%}); load {_load()}")
                result.loads.append(f"after bulk create round {round_ + 1} {_load()}")
        for name, bench in benches.items():
            result = results[name]
            if not bulk_only:
                with _worker_if_whoosh(bench, name):
                    result.fresh = freshness(bench)
                log(f"  freshness: {', '.join(f'{f * 1000:.0f} ms' for f in result.fresh)}")
            with bench.app.app_context():
                try:
                    result.stored_bytes = backend.current().status().bytes
                finally:
                    db.session.remove()
    return list(results.values())


# ---------------------------------------------------------------- report

def _word(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def _projected(r: BackendRun) -> float:
    """The rebuild of 10^6 entities, linear from this run's."""
    return r.rebuild_seconds * MILLION / r.entities


def _at(entities: int) -> str:
    return "at 10^6" if entities >= MILLION else f"at {entities:,} (the target is at 10^6)"


def _rounds(r: BackendRun) -> str:
    batches = len(r.bulk[0].seconds["on"]) if r.bulk else 0
    if len(r.bulk) < 2:
        return f"{batches} batches of 500 per state"
    return f"{len(r.bulk)} rounds of {batches} batches per state: {r.bulk_spread}"


def summary(results: list[BackendRun]) -> list[str]:
    """Issue 34 §4's targets, one line per target and backend, then where Whoosh is
    faster."""
    lines = []
    for r in results:
        if r.name == "postgresql":
            seconds = r.rebuild_seconds if r.entities >= MILLION else _projected(r)
            how = ("" if r.entities >= MILLION else
                   f"; {r.rebuild_seconds:.1f} s at {r.entities:,}, projected linearly")
            lines.append(f"postgresql backend: rebuild of 10^6 {seconds:,.0f} s{how} "
                         f"(target < {TARGET_REBUILD:.0f} s): {_word(seconds < TARGET_REBUILD)}")
        slow = [f"{kind} {latency.p(0.95) * 1000:.1f} ms" for kind, latency in r.api.items()
                if latency.p(0.95) >= TARGET_P95]
        if r.api:
            lines.append(f"{r.name} backend: worst p95 {r.worst_p95 * 1000:.1f} ms "
                         f"{_at(r.entities)} (target every kind < 50 ms): {_word(not slow)}"
                         + (f" — over: {', '.join(slow)}" if slow else ""))
        lines.append(f"{r.name} backend: bulk create {r.rate_on:,.0f}/s indexing on against "
                     f"{r.rate_off:,.0f}/s off (no search work) = {r.bulk_ratio:.0%} "
                     f"{_at(r.entities)}, {_rounds(r)}; against {r.rate_off_queued:,.0f}/s off "
                     f"with the queue triggers kept (earlier runs' off) "
                     f"{r.rate_on / r.rate_off_queued:.0%} (target ≥ 80%): "
                     f"{_word(r.bulk_ratio >= TARGET_BULK)}")
        if r.fresh:
            lines.append(f"{r.name} backend: rebuild {r.rebuild_seconds:.1f} s, incremental "
                         f"{r.drain_rate:,.0f} documents/s, freshness "
                         f"{max(r.fresh) * 1000:,.0f} ms at worst (no targets)")
    lines.extend(whoosh_faster(results))
    return lines


def whoosh_faster(results: list[BackendRun]) -> list[str]:
    """Where the Whoosh backend beat the PostgreSQL backend in this run (kinds answered by
    the backends only)."""
    by_name = {r.name: r for r in results}
    if not {"whoosh", "postgresql"} <= by_name.keys():
        return []
    w, p = by_name["whoosh"], by_name["postgresql"]
    faster = [f"{kind} p95 {w.api[kind].p(0.95) * 1000:.1f} against "
              f"{p.api[kind].p(0.95) * 1000:.1f} ms" for kind in w.api
              if kind in p.api and kind not in SQL_ONLY
              and w.api[kind].p(0.95) < p.api[kind].p(0.95)]
    if w.rebuild_seconds < p.rebuild_seconds:
        faster.append(f"rebuild {w.rebuild_seconds:.1f} against {p.rebuild_seconds:.1f} s")
    if w.drain_rate > p.drain_rate:
        faster.append(f"incremental {w.drain_rate:,.0f} against {p.drain_rate:,.0f}/s")
    if w.bulk_ratio > p.bulk_ratio:
        faster.append(f"bulk create ratio {w.bulk_ratio:.0%} against {p.bulk_ratio:.0%}")
    return [f"where Whoosh is faster: {'; '.join(faster) if faster else 'nowhere in this run'}"]


def render(results: list[BackendRun], facts: list[str]) -> str:
    """The run's whole report: a table of both backends, then each backend's loads."""
    names = [r.name for r in results]
    queried = any(r.api for r in results)
    lines = [*facts, "", f"{results[0].entities:,} Samples per backend, each on a PostgreSQL "
             "database of its own" + ("; latency p50 / p95 / max in ms "
             f"({RUNS} runs after {WARMUP} warm-ups; the max includes the first, cold run), "
             "`$top` 50, as a reader whose access filter applies." if queried else
             "; seeding, rebuild and the bulk create only (`--bulk-only`)."), "",
             "| measure | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]

    def row(label: str, value: Callable[[BackendRun], str]) -> None:
        lines.append(f"| {label} | " + " | ".join(value(r) for r in results) + " |")

    row("seed (Core) + VACUUM ANALYZE", lambda r: f"{r.seed_seconds:.1f} s")
    row("`search rebuild`", lambda r: f"{r.rebuild_seconds:.1f} s "
        f"({r.entities / r.rebuild_seconds:,.0f}/s)")
    row("rebuild of 10^6, linear projection", lambda r: f"{_projected(r):,.0f} s")
    if queried:
        row("incremental indexing (drain of changed entities)",
            lambda r: f"{r.drain_rate:,.0f}/s ({r.changed:,} changed)")
        row("freshness (500-entity POST → all found)",
            lambda r: ", ".join(f"{f * 1000:.0f} ms" for f in r.fresh))
    row("bulk create, indexing on / off / off, queued", lambda r: f"{r.rate_on:,.0f} / "
        f"{r.rate_off:,.0f} / {r.rate_off_queued:,.0f} per s = {r.bulk_ratio:.0%} "
        f"({r.rate_on / r.rate_off_queued:.0%} of off, queued)")
    row("bulk create, on against off per round", lambda r: r.bulk_spread)
    row("documents stored", lambda r: "—" if r.stored_bytes is None
        else f"{r.stored_bytes / 2**20:,.0f} MiB")
    for kind in results[0].api:
        row(f"{kind}", lambda r, kind=kind: r.api[kind].row())
    lines.append("")
    for r in results:
        lines.append(f"- {r.name}: load average (1/5/15 min) {'; '.join(r.loads)}")
    return "\n".join(lines) + "\n"
