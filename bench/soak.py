"""Issue 24: a soak. labapp served as ``make run`` serves it, under mixed load for minutes,
and the resident memory of every serving process.

``run_soak`` serves the database of ``environment`` (``LABAPP_*`` variables) with a real
gunicorn (``make run``'s two sync workers and settings module) beside the background worker
(``flask --app labapp worker``), and drives it over HTTP from :data:`READERS` reader threads
and one writer for the given minutes:

- each reader, back to back, round-robin: an entity list page with a ``$filter`` and
  ``$orderby`` (both varied, so caches keyed by query text see many keys), one entity, entity
  and field suggestions, a unique-value lookup, a full-text and a merged search, the
  dashboard page and its widget fragments, the storage box page;
- the writer, every :data:`WRITER_PAUSE` s: a batch of :data:`BATCH` new samples, an edit of
  two of them, three checked into the box and the previous three checked out again, so the
  background worker indexes and folds tallies all along.

Every :data:`SAMPLE_SECONDS` s the VmRSS of each gunicorn worker and of the background worker
is read from ``/proc``. A process's start is the median of its samples in the minute after
the warm-up (:func:`warmup_seconds`; a fifth of a shorter soak each), its end the median of
the last minute; target end / start ≤ :data:`RSS_TARGET`; the peak is reported. Any
answer not 2xx counts as an error of its kind, a 5xx as a server error.

Standalone: ``python -m bench.soak --backend sqlite --entities 100000 --minutes 5`` seeds a
fresh database of its own (``bench/soak_seed.py``) and prints the result.
"""
from __future__ import annotations

import json
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from bench.server import Server, children, gunicorn, request, rss

READERS = 3
BATCH = 5  # samples per writer batch; two are edited, three checked in and out again
WRITER_PAUSE = 0.5  # seconds between two writer rounds
SAMPLE_SECONDS = 5.0
RSS_TARGET = 1.5
ORDERS = ("name", "amount desc", "createdUtc desc", "id desc")
FILTERS = ("amount gt {n}", "startswith(name,'S-{n:03d}')",
           "status eq 'Initial' and amount lt {n}", "contains(name,'{n:03d}')")
ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class SoakTargets:
    """What the load reads and writes in a database someone seeded.

    ``reader`` and ``writer`` are request headers that authenticate them: a PAT as Basic
    ``username:PAT`` outlives any soak (a Bearer access token expires after 20 minutes).
    The reader must see ``sample_ids`` (Samples with ``name`` and ``amount``), ``box`` and
    ``dashboard`` (with ``widgets`` widgets); the writer creates Samples in ``department``
    and checks them into ``box`` (a box with at least three free slots).
    """

    reader: dict[str, str]
    writer: dict[str, str]
    department: str
    sample_ids: tuple[str, ...]
    box: str
    dashboard: str
    widgets: int = 0


@dataclass
class Kind:
    """The requests of one kind: their times and the answers that were not 2xx."""

    times: list[float] = field(default_factory=list)
    failures: dict[int, int] = field(default_factory=dict)  # status (0: no answer) → count

    @property
    def errors(self) -> int:
        return sum(self.failures.values())

    @property
    def server_errors(self) -> int:
        return sum(count for status, count in self.failures.items() if status >= 500)

    def p(self, q: float) -> float:
        ordered = sorted(self.times)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


@dataclass
class Process:
    """One serving process's memory: (seconds into the soak, VmRSS, RssAnon) samples.

    Its start is the median of the samples in the ``window`` seconds after the warm-up, its
    end the median of the last ``window`` seconds: a request that briefly holds a lot (a
    search opening a new index generation) moves a single sample, not the median.
    """

    role: str
    pid: int
    warmup: float
    window: float
    samples: list[tuple[float, int, int]] = field(default_factory=list)

    def _after(self) -> list[tuple[float, int, int]]:
        return [sample for sample in self.samples if sample[0] >= self.warmup and sample[1]]

    def _median(self, first: float, last: float, part: int = 1) -> int:
        values = [sample[part] for sample in self._after() if first <= sample[0] <= last]
        return int(statistics.median(values)) if values else 0

    @property
    def start(self) -> int:
        return self._median(self.warmup, self.warmup + self.window)

    @property
    def end(self) -> int:
        after = self._after()
        return self._median(after[-1][0] - self.window, after[-1][0]) if after else 0

    @property
    def anon(self) -> tuple[int, int]:
        """RssAnon at the start and the end, the same way."""
        after = self._after()
        if not after:
            return 0, 0
        return (self._median(self.warmup, self.warmup + self.window, 2),
                self._median(after[-1][0] - self.window, after[-1][0], 2))

    @property
    def peak(self) -> int:
        return max((sample[1] for sample in self._after()), default=0)

    @property
    def ratio(self) -> float:
        return self.end / self.start if self.start else float("nan")

    @property
    def ok(self) -> bool:
        return bool(self.start) and self.ratio <= RSS_TARGET


@dataclass
class SoakResult:
    label: str
    minutes: float
    warmup: float
    seconds: float
    processes: list[Process]
    kinds: dict[str, Kind]

    @property
    def requests(self) -> int:
        return sum(len(kind.times) for kind in self.kinds.values())

    @property
    def server_errors(self) -> int:
        return sum(kind.server_errors for kind in self.kinds.values())

    @property
    def ok(self) -> bool:
        return all(p.ok for p in self.processes) and not self.server_errors

    def render(self) -> str:
        """A markdown block: memory per process, requests per kind, memory over time."""
        lines = [f"### Soak: {self.label}, {self.minutes:g} min ({self.seconds:.0f} s), "
                 f"warm-up {self.warmup:.0f} s, {self.requests:,} requests "
                 f"({self.requests / self.seconds:,.1f}/s), verdict "
                 f"{'**PASS**' if self.ok else '**FAIL**'}", "",
                 "| process | pid | RSS after warm-up | end | peak | end / start | target "
                 "| of which anonymous, start → end |",
                 "|---|---:|---:|---:|---:|---:|---|---|"]
        for p in self.processes:
            lines.append(f"| {p.role} | {p.pid} | {_mib(p.start)} | {_mib(p.end)} | "
                         f"{_mib(p.peak)} | {p.ratio:.2f}× | ≤ {RSS_TARGET}× "
                         f"{'PASS' if p.ok else 'FAIL'} | {_mib(p.anon[0])} → "
                         f"{_mib(p.anon[1])} |")
        lines += ["", "| requests | count | per s | p50 | p95 | max | not 2xx | 5xx |",
                  "|---|---:|---:|---:|---:|---:|---|---:|"]
        for name, kind in self.kinds.items():
            failures = ", ".join(f"{count} × {status or 'no answer'}"
                                 for status, count in sorted(kind.failures.items()))
            lines.append(f"| {name} | {len(kind.times):,} | {len(kind.times) / self.seconds:.1f}"
                         f" | {_ms(kind.p(0.5))} | {_ms(kind.p(0.95))} | "
                         f"{_ms(max(kind.times, default=0))} | {failures or 'none'} | "
                         f"{kind.server_errors} |")
        lines += ["", "RSS per minute (MiB): " + "; ".join(
            f"{p.role} {p.pid}: " + " ".join(_minutes(p)) for p in self.processes), ""]
        return "\n".join(lines)


def _mib(value: float) -> str:
    return f"{value / 1024 / 1024:,.1f} MiB"


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms"


def _minutes(process: Process) -> list[str]:
    """The first sample of each minute, and the last one."""
    picked, minute = [], 0.0
    for at, value, _ in process.samples:
        if at >= minute:
            picked.append(f"{value / 1024 / 1024:.0f}")
            minute = (at // 60 + 1) * 60
    if process.samples and len(process.samples) > 1:
        picked.append(f"{process.samples[-1][1] / 1024 / 1024:.0f}")
    return picked


def warmup_seconds(minutes: float) -> float:
    """The first minute, or the first fifth of a shorter soak."""
    return min(60.0, minutes * 60 / 5)


def reader_round(t: SoakTargets, rng: random.Random) -> list[tuple[str, str, dict[str, str]]]:
    """One round of a reader's requests: (kind, path, headers), with fresh parameters."""
    sample = rng.choice(t.sample_ids)
    n = rng.randrange(1000)
    query = (f"$filter={quote(rng.choice(FILTERS).format(n=n))}"
             f"&$orderby={quote(rng.choice(ORDERS))}&$top=50")
    headers, fragment = t.reader, {**t.reader, "HX-Request": "true"}
    return [
        ("list", f"/api/entity/Sample?{query}", headers),
        ("get one", f"/api/entity/Sample/{quote(sample)}", headers),
        ("suggest", f"/api/query/suggest/entity/Sample/{quote(sample[:-2])}", headers),
        ("suggest", f"/api/query/suggest/field/Sample/unit/{'mLu'[n % 3]}", headers),
        ("unique", f"/api/query/unique/field/Sample/name/S-{n:07d}", headers),
        ("full-text search", f"/api/search/fulltext/{quote(sample)}", headers),
        ("merged search", f"/api/search/{quote(sample[:-3])}", headers),
        ("dashboard page", f"/dashboards/{t.dashboard}", headers),
        *[("dashboard widget", f"/dashboards/{t.dashboard}/widget/{index}", fragment)
          for index in range(t.widgets)],
        ("box page", f"/storage/locations/{quote(t.box)}", headers)]


class _Load:
    """The client threads of one soak, sharing a stop time and their tallies."""

    def __init__(self, server: Server, targets: SoakTargets) -> None:
        self.server, self.targets = server, targets
        self.kinds: dict[str, Kind] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.errors: list[str] = []

    def call(self, connection, kind: str, method: str, path: str, headers: dict[str, str],
             body: object = None) -> tuple[int, bytes]:
        started = time.perf_counter()
        try:
            status, answer = request(connection, method, path, headers, body)
        except (OSError, ConnectionError) as error:
            connection.close()  # http.client reconnects at the next request
            status, answer = 0, str(error).encode()
        elapsed = time.perf_counter() - started
        with self.lock:
            tally = self.kinds.setdefault(kind, Kind())
            tally.times.append(elapsed)
            if not 200 <= status < 300:
                tally.failures[status] = tally.failures.get(status, 0) + 1
                if len(self.errors) < 20:
                    self.errors.append(f"{kind} {method} {path}: {status} {answer[:200]!r}")
        return status, answer

    def reader(self, number: int) -> None:
        rng = random.Random(number)
        connection = self.server.connection()
        while not self.stop.is_set():
            for kind, path, headers in reader_round(self.targets, rng):
                if self.stop.is_set():
                    break
                self.call(connection, kind, "GET", path, headers)

    def writer(self) -> None:
        t = self.targets
        connection = self.server.connection()
        stored: list[str] = []
        number = 0
        while not self.stop.wait(WRITER_PAUSE):
            batch = [{"eClass": "Sample", "departmentID": t.department,
                      "name": f"S-soak-{os.getpid()}-{number + i}", "amount": 12.5 + i,
                      "unit": "mL", "attributes": {"soak": number + i}} for i in range(BATCH)]
            number += BATCH
            status, answer = self.call(connection, "create samples", "POST", "/api/entity",
                                       t.writer, {"entities": batch})
            if status != 201:
                continue
            created = [item["id"] for item in json.loads(answer)["entities"]]
            self.call(connection, "edit samples", "POST", "/api/entity", t.writer, {
                "entities": [{"eClass": "Sample", "id": item, "amount": 50.0,
                              "description": f"edited at {number}"} for item in created[:2]]})
            if stored:
                self.call(connection, "check out", "POST", "/api/storage/location/checkout",
                          t.writer, [{"eClass": "Sample", "id": item} for item in stored])
            stored = created[2:]
            self.call(connection, "check in", "POST",
                      f"/api/storage/location/{quote(t.box)}/checkin", t.writer,
                      [{"eClass": "Sample", "id": item} for item in stored])


@contextmanager
def background_worker(environment: dict[str, str]) -> Iterator[subprocess.Popen]:
    """``flask --app labapp worker`` (as ``make run`` starts it) on ``environment``, once it
    has frozen its start-up; stopped with SIGTERM on exit."""
    process = subprocess.Popen([sys.executable, "-m", "flask", "--app", "labapp", "worker"],
                               env={**os.environ, **environment}, cwd=ROOT,
                               stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if "frozen" in line:
                break
        else:
            raise RuntimeError(f"the background worker exited with {process.wait()}")
        yield process
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=120)
        if process.stdout is not None:
            process.stdout.close()


def _sample(master: int, worker: int, processes: dict[int, Process], started: float,
            warmup: float) -> None:
    at = time.monotonic() - started
    for pid, role in [(pid, "gunicorn worker") for pid in children(master)] + [
            (worker, "background worker")]:
        process = processes.setdefault(pid, Process(role, pid, warmup, window=warmup))
        process.samples.append((at, rss(pid), rss(pid, "RssAnon")))


def run_soak(environment: dict[str, str], minutes: float, targets: SoakTargets,
             log: Callable[[str], None] = print) -> SoakResult:
    """Serve ``environment``'s database for ``minutes`` under the mixed load of the module
    docstring and measure the serving processes' memory. Raises RuntimeError when a server
    does not start."""
    warmup = warmup_seconds(minutes)
    url = environment.get("LABAPP_DATABASE_URL", "sqlite")
    label = url.split(":", 1)[0].split("+", 1)[0]
    processes: dict[int, Process] = {}
    log(f"[{label}] soak: {minutes:g} min, {READERS} readers and a writer, warm-up "
        f"{warmup:.0f} s, RSS every {SAMPLE_SECONDS:g} s ...")
    with background_worker(environment) as worker, gunicorn(environment) as server:
        assert server.pid is not None
        load = _Load(server, targets)
        threads = [threading.Thread(target=load.reader, args=(n,), name=f"soak-reader-{n}")
                   for n in range(READERS)]
        threads.append(threading.Thread(target=load.writer, name="soak-writer"))
        started = time.monotonic()
        for thread in threads:
            thread.start()
        deadline = started + minutes * 60
        next_log = started + 60
        while True:
            _sample(server.pid, worker.pid, processes, started, warmup)
            now = time.monotonic()
            if now >= deadline:
                break
            if now >= next_log:
                next_log += 60
                log(f"  [{label}] {(now - started) / 60:.0f} min: "
                    f"{sum(len(k.times) for k in load.kinds.values()):,} requests, RSS " +
                    ", ".join(f"{p.role} {p.pid} {_mib(p.samples[-1][1])}"
                              for p in processes.values() if p.samples[-1][1]))
            time.sleep(min(SAMPLE_SECONDS, deadline - now))  # the sampling period
        load.stop.set()
        for thread in threads:
            thread.join()
        seconds = time.monotonic() - started
    for line in load.errors:
        log(f"  [{label}] error: {line}")
    return SoakResult(label, minutes, warmup, seconds, list(processes.values()),
                      dict(sorted(load.kinds.items())))


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.soak [--backend sqlite|postgresql|both] [--entities N] [--minutes M]``:
    a fresh database per backend, the soak, its markdown block on stdout."""
    import argparse

    from bench.soak_seed import seeded

    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.split(
        "\n\n")[0])
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="sqlite")
    parser.add_argument("--entities", type=int, default=100_000)
    parser.add_argument("--minutes", type=float, default=5.0)
    args = parser.parse_args(argv)
    backends = ("sqlite", "postgresql") if args.backend == "both" else (args.backend,)
    results = []
    for backend in backends:
        with seeded(backend, args.entities) as (environment, targets):
            results.append(run_soak(environment, args.minutes, targets))
        print("\n" + results[-1].render(), flush=True)
    return 0 if all(result.ok for result in results) else 1


if __name__ == "__main__":
    sys.exit(main())
