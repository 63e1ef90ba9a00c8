"""Issue 20 §1: browsers polling the bell and their dashboard's widgets while clients write.

On a database of its own (Samples seeded through Core, a reader's dashboard of four
widgets), a gunicorn server as ``make run`` starts it (two sync workers, the worker process
beside it) is loaded for :data:`SECONDS` per phase by

- :data:`BROWSERS` simulated browsers (the reader, Bearer token): each asks for the bell's
  fragment and then each widget's fragment (``HX-Request``), then thinks
  :data:`THINK_SECONDS` (a real tab polls the bell every 30 s and each widget every 60 s;
  the cycle is compressed, not the requests), and
- :data:`WRITERS` clients (the administrator) sending ``POST /api/entity`` batches of
  :data:`ROWS` Samples back to back.

Phases alternate BEFORE (``LABAPP_READ_UNITS=false``: every unit of work takes SQLite's
write lock, as before issue 20) and AFTER (routes that read run read units), each on a
freshly started server, so both meet the same machine and a database growing alike. The
result per mode: written rows per second, the p50/p95 of widget and bell requests, and the
answers that were not 2xx (503 ``database_busy`` when a lock waited past the busy timeout).
"""
from __future__ import annotations

import os
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.dashboards import percentile
from bench.harness import Bench, open_bench, sample_values
from bench.report import machine_facts
from bench.results import Run, publish
from bench.server import Server, gunicorn, request
from bench.serving import forget_search_backlog, indexer_worker
from bench.write import core_seed

TOPIC, TITLE = "read-units", "Reads never take the write lock (issue 20 §1)"
SEEDED = 10_000
BROWSERS = 30
WRITERS = 4
ROWS = 50
SECONDS = 25.0
ROUNDS = 2  # BEFORE, AFTER, BEFORE, AFTER
THINK_SECONDS = 2.0
MODES = ("before", "after")
# Sync workers: more than `make run`'s two, or the four back-to-back writers alone would keep
# every worker busy and each request would wait for a worker whatever its unit did.
SERVER_WORKERS = 6
WIDGETS = [
    {"plugin": {"app": "labapp", "plugin": plugin}, "config": config,
     "gridster": {"x": 0, "y": 4 * number, "cols": 6, "rows": 4}}
    for number, (plugin, config) in enumerate([
        ("status-counts", {"eClass": "Sample"}),
        ("created-per-week", {"eClass": "Sample", "weeks": 12}),
        ("saved-list", {"eClass": "Sample", "filter": "startswith(name,'S')",
                        "columns": ["id", "name", "amount"], "top": 10}),
        ("recent-activity", {"limit": 10}),
    ])]


@dataclass
class Phase:
    """What one phase measured."""

    mode: str
    seconds: float = 0.0
    rows: int = 0
    widget_times: list[float] = field(default_factory=list)
    bell_times: list[float] = field(default_factory=list)
    failures: dict[str, int] = field(default_factory=dict)


@dataclass
class ModeResult:
    """The phases of one mode together."""

    mode: str
    phases: list[Phase]

    def values(self, name: str) -> list[float]:
        """Every measurement ``name`` (``widget_times``, ``bell_times``) of the phases."""
        return [value for phase in self.phases for value in getattr(phase, name)]

    @property
    def rows_per_second(self) -> float:
        return sum(p.rows for p in self.phases) / sum(p.seconds for p in self.phases)

    def p(self, name: str, q: float) -> float:
        values = self.values(name)
        return percentile(values, q) if values else float("nan")

    def median(self, name: str) -> float:
        values = self.values(name)
        return statistics.median(values) if values else float("nan")

    @property
    def failures(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for phase in self.phases:
            for key, count in phase.failures.items():
                total[key] = total.get(key, 0) + count
        return total


@dataclass
class ReadLockResult:
    backend: str
    modes: dict[str, ModeResult]
    seconds: float = 0.0


class _Load:
    """The clients of one phase, sharing a stop time and their tallies."""

    def __init__(self, server: Server, bench: Bench, board: str, phase: Phase) -> None:
        self.server, self.bench, self.board, self.phase = server, bench, board, phase
        self.lock = threading.Lock()
        self.stop_at = 0.0
        self.next_row = 1_000_000 * (1 + len(phase.mode))

    def _failed(self, what: str, status: int) -> None:
        with self.lock:
            key = f"{what} {status}"
            self.phase.failures[key] = self.phase.failures.get(key, 0) + 1

    def _timed(self, connection: Any, path: str, headers: dict[str, str],
               into: list[float], what: str) -> None:
        start = time.perf_counter()
        status, _ = request(connection, "GET", path, headers)
        elapsed = time.perf_counter() - start
        with self.lock:
            into.append(elapsed)
        if status != 200:
            self._failed(what, status)

    def browser(self) -> None:
        connection = self.server.connection()
        headers = {**self.bench.reader_headers, "HX-Request": "true"}
        while time.monotonic() < self.stop_at:
            self._timed(connection, "/notifications/bell", headers, self.phase.bell_times,
                        "bell")
            for index in range(len(WIDGETS)):
                self._timed(connection, f"/dashboards/{self.board}/widget/{index}", headers,
                            self.phase.widget_times, "widget")
            time.sleep(THINK_SECONDS)  # the user's think time, not synchronisation

    def writer(self) -> None:
        connection = self.server.connection()
        while time.monotonic() < self.stop_at:
            with self.lock:
                first = self.next_row
                self.next_row += ROWS
            body = {"entities": [{"eClass": "Sample", "departmentID": self.bench.department,
                                  **sample_values(number)}
                                 for number in range(first, first + ROWS)]}
            status, _ = request(connection, "POST", "/api/entity", self.bench.admin_headers,
                                body)
            if status == 201:
                with self.lock:
                    self.phase.rows += ROWS
            else:
                self._failed("write", status)

    def run(self, seconds: float) -> None:
        threads = [threading.Thread(target=self.browser) for _ in range(BROWSERS)]
        threads += [threading.Thread(target=self.writer) for _ in range(WRITERS)]
        started = time.monotonic()
        self.stop_at = started + seconds
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.phase.seconds = time.monotonic() - started


def _phase(bench: Bench, board: str, mode: str, seconds: float,
           log: Callable[[str], None]) -> Phase:
    settings = bench.app.config["LABAPP"]
    environment = {"LABAPP_INSTANCE_PATH": settings["INSTANCE_PATH"],
                   "LABAPP_DATABASE_URL": settings["DATABASE_URL"],
                   "LABAPP_SECRET_KEY": settings["SECRET_KEY"],
                   "LABAPP_READ_UNITS": "false" if mode == "before" else "true"}
    phase = Phase(mode)
    with gunicorn(environment, workers=SERVER_WORKERS) as server:
        _Load(server, bench, board, phase).run(seconds)
    log(f"  [{bench.backend}] {mode}: {phase.rows / phase.seconds:,.0f} rows/s, widget p95 "
        f"{percentile(phase.widget_times, 95) * 1000:.0f} ms, bell p95 "
        f"{percentile(phase.bell_times, 95) * 1000:.0f} ms, not 2xx {phase.failures or 0}")
    return phase


def run(backend: str, seconds: float = SECONDS, rounds: int = ROUNDS,
        log: Callable[[str], None] = print) -> ReadLockResult:
    started = time.perf_counter()
    log(f"[{backend}] read lock (issue 20): fresh database, {SEEDED:,} samples, "
        f"{BROWSERS} browsers, {WRITERS} writers, {seconds:.0f} s per phase ...")
    with open_bench(backend) as bench:
        core_seed(bench, SEEDED, log=log)
        forget_search_backlog(bench)
        created = bench.client.post("/api/dashboard", headers=bench.reader_headers,
                                    json={"name": "Read lock", "widgets": WIDGETS})
        if created.status_code != 201:
            raise RuntimeError(f"dashboard not created: {created.get_json()}")
        board = created.get_json()["id"]
        phases: dict[str, list[Phase]] = {mode: [] for mode in MODES}
        with indexer_worker(bench):
            for _ in range(rounds):
                for mode in MODES:
                    phases[mode].append(_phase(bench, board, mode, seconds, log))
    modes = {mode: ModeResult(mode, phases[mode]) for mode in MODES}
    return ReadLockResult(backend, modes, time.perf_counter() - started)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms"


def _row(label: str, before: float, after: float, unit: Callable[[float], str]) -> str:
    ratio = after / before if before else float("nan")
    return f"| {label} | {unit(before)} | {unit(after)} | {ratio:.2f}× |"


def render(results: list[ReadLockResult], facts: list[str]) -> str:
    lines = [*facts, ""]
    for r in results:
        before, after = r.modes["before"], r.modes["after"]
        lines += [f"### {r.backend} ({BROWSERS} browsers, {WRITERS} writers of {ROWS} rows, "
                  f"{len(before.phases)} × {before.phases[0].seconds:.0f} s per mode, "
                  f"alternating; {r.seconds:.0f} s in all)", "",
                  "| measure | BEFORE (every unit writes) | AFTER (reads read) | AFTER / BEFORE |",
                  "|---|---|---|---|",
                  _row("writes, rows/s", before.rows_per_second, after.rows_per_second,
                       lambda v: f"{v:,.0f}")]
        for name, label in (("widget_times", "widget"), ("bell_times", "bell")):
            lines.append(_row(f"{label} p50", before.median(name), after.median(name), _ms))
            lines.append(_row(f"{label} p95", before.p(name, 95), after.p(name, 95), _ms))
        counts = [len(before.values("widget_times")), len(after.values("widget_times"))]
        lines += [f"| widget requests served | {counts[0]:,} | {counts[1]:,} | "
                  f"{counts[1] / counts[0]:.2f}× |",
                  f"| answers not 2xx | {before.failures or 'none'} | "
                  f"{after.failures or 'none'} | |", ""]
    return "\n".join(lines) + "\n"


def summary(results: list[ReadLockResult]) -> list[str]:
    """Before (every unit writes) → after (reads read), one line per database; no target."""
    lines = []
    for r in results:
        before, after = r.modes["before"], r.modes["after"]
        lines.append(f"{r.backend}: writes {before.rows_per_second:,.0f} → "
                     f"{after.rows_per_second:,.0f} rows/s; widget p95 "
                     f"{_ms(before.p('widget_times', 95))} → "
                     f"{_ms(after.p('widget_times', 95))}; bell p95 "
                     f"{_ms(before.p('bell_times', 95))} → {_ms(after.p('bell_times', 95))}")
    return lines


def main_part(backends: tuple[str, ...], seconds: float, save_to: Any, command: str) -> int:
    """``--readlock-only``: run, print the report, publish it unless ``save_to`` is None."""
    load_before = os.getloadavg()
    results = [run(backend, seconds) for backend in backends]
    facts = machine_facts([], command, (load_before, os.getloadavg()))
    block = render(results, facts)
    print("\n" + block)
    if save_to is not None:
        written = publish(save_to, Run(TOPIC, TITLE, facts, summary(results), block))
        print(f"written to {written} and {save_to}")
    return 0
