"""Issue 13: an OData export of every row of a view through ``@odata.nextLink`` paging.

On a fresh database seeded through Core (``--entities`` Samples of the reader's department),
the reader (row-level security active) reads every page of ``/odata/Sample`` (default page
size), following the next links:

1. in this process through the Flask test client (as the rest of ``bench/`` measures the API),
   alternating with one SQLAlchemy Core select of the same rows and columns from the same view
   + ``json.dumps`` (the floor: no paging, no streaming); medians of the runs. Target: OData
   rows/s ≥ 50% of Core's; the last full page no slower than 1.25× the first.
2. over HTTP from a real gunicorn server (one sync worker, so "the worker" is one process),
   Basic password as a BI tool sends it: rows/s (reported, no target: the client shares the
   machine) and the worker's resident memory (VmRSS, sampled every 10 ms) before the export,
   after its tenth page and at its peak (flat: the peak at most 16 MiB above the tenth
   page's).
"""
from __future__ import annotations

import json
import re
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from sqlalchemy import select

from bench import write
from bench.harness import READER, READER_PASSWORD, Bench, open_bench
from bench.read import _json_default
from bench.server import Server, basic, children, gunicorn, request, rss
from labapp.query.dbviews import BUILT_IN_VIEWS as VIEWS

TOPIC, TITLE = "odata", "OData export (issue 13)"
RUNS = 3
RATIO_TARGET = 0.5
LAST_PAGE_TARGET = 1.25
FLAT_MIB = 16
FEED = "/odata/Sample"


@dataclass
class Export:
    """One export: seconds per page (request + body read), rows, RSS samples."""

    pages: list[float] = field(default_factory=list)
    rows: int = 0
    rss_after_tenth: int = 0

    @property
    def seconds(self) -> float:
        return sum(self.pages)


@dataclass
class OdataResult:
    backend: str
    rows: int
    exports: list[Export]
    core_runs: list[float]
    http: Export
    rss_before: int
    rss_peak: int
    seconds: float

    @property
    def http_rate(self) -> float:
        return self.rows / self.http.seconds

    @property
    def odata_rate(self) -> float:
        return self.rows / statistics.median(e.seconds for e in self.exports)

    @property
    def core_rate(self) -> float:
        return self.rows / statistics.median(self.core_runs)

    @property
    def first_page(self) -> float:
        return statistics.median(e.pages[0] for e in self.exports)

    @property
    def last_page(self) -> float:
        """The last full page (the very last may be short)."""
        return statistics.median(e.pages[-2] if len(e.pages) > 1 else e.pages[-1]
                                 for e in self.exports)

    @property
    def rss_tenth(self) -> int:
        return self.http.rss_after_tenth


class RssSampler:
    """Samples the VmRSS of the children of ``pid`` (the gunicorn workers) until stopped."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def current(self) -> int:
        return sum(rss(child) for child in children(self.pid))

    def _run(self) -> None:
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, self.current())

    def __enter__(self) -> RssSampler:
        self.peak = self.current()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _follow(get: Callable[[str], tuple[int, bytes]],
            after_tenth: Callable[[], int] = lambda: 0) -> Export:
    """Every page of the feed through ``get(path) -> (status, body)``, following the links."""
    result = Export()
    path: str | None = FEED
    while path:
        started = time.perf_counter()
        status, body = get(path)
        result.pages.append(time.perf_counter() - started)
        if status != 200:
            raise RuntimeError(f"GET {path}: {status} {body[:300]!r}")
        page = json.loads(body)
        result.rows += len(page["value"])
        if len(result.pages) == 10:
            result.rss_after_tenth = after_tenth()
        link = page.get("@odata.nextLink")
        path = None if link is None else urlsplit(link)._replace(scheme="", netloc="").geturl()
    return result


def in_process(bench: Bench) -> Export:
    """The export through the Flask test client (the body is read as it streams)."""
    def get(path: str) -> tuple[int, bytes]:
        response = bench.client.get(path, headers=bench.reader_headers)
        return response.status_code, response.get_data()
    return _follow(get)


def over_http(server: Server, sampler: RssSampler) -> Export:
    """The export over HTTP from gunicorn, as a BI tool reads it (Basic password)."""
    connection = server.connection()
    headers = {**basic(READER, READER_PASSWORD), "Accept": "application/json"}
    try:
        return _follow(lambda path: request(connection, "GET", path, headers), sampler.current)
    finally:
        connection.close()


def core_export(engine, department: str, dialect: str) -> tuple[float, int]:
    """The same rows and columns from the same view in one Core select + ``json.dumps``."""
    view = VIEWS["Sample"].table(dialect)
    names = [column.name for column in VIEWS["Sample"].columns]
    started = time.perf_counter()
    with engine.connect() as connection:
        rows = connection.execute(select(*view.c).where(view.c.department_id == department)
                                  .order_by(view.c.id)).all()
    body = json.dumps([dict(zip(names, row, strict=True)) for row in rows],
                      default=_json_default)
    elapsed = time.perf_counter() - started
    del body
    return elapsed, len(rows)


def run(backend: str, entities: int, runs: int = RUNS, log=print) -> OdataResult:
    started = time.perf_counter()
    log(f"[{backend}] OData: fresh database, {entities:,} samples through Core ...")
    with open_bench(backend) as bench, tempfile.TemporaryDirectory() as instance:
        write.core_seed(bench, entities, log=log)
        if backend == "postgresql":  # what autovacuum does soon after a bulk load (as main)
            with bench.engine.connect() as connection:
                connection.execution_options(isolation_level="AUTOCOMMIT") \
                    .exec_driver_sql("ANALYZE")
        in_process(bench)  # warm-up
        exports, core_runs = [], []
        for number in range(runs):
            exports.append(in_process(bench))
            seconds, count = core_export(bench.engine, bench.department, backend)
            core_runs.append(seconds)
            if count != exports[-1].rows or count != entities:
                raise RuntimeError(f"rows differ: OData {exports[-1].rows}, Core {count}, "
                                   f"seeded {entities}")
            log(f"  [{backend}] run {number + 1}: OData {exports[-1].seconds:.2f} s "
                f"({len(exports[-1].pages)} pages), Core {seconds:.2f} s")
        environment = {"LABAPP_DATABASE_URL": bench.app.config["SQLALCHEMY_DATABASE_URI"],
                       "LABAPP_INSTANCE_PATH": instance,
                       "LABAPP_SECRET_KEY": "secret-key-of-the-odata-benchmark"}
        with gunicorn(environment, workers=1) as server:
            assert server.pid is not None
            request(server.connection(), "GET", f"{FEED}?$top=10",
                    basic(READER, READER_PASSWORD))  # warm-up: the password is verified once
            with RssSampler(server.pid) as sampler:
                rss_before = sampler.peak
                http = over_http(server, sampler)
            rss_peak = sampler.peak
            log(f"  [{backend}] over HTTP: {http.seconds:.2f} s, worker RSS peak "
                f"{_mib(rss_peak)}")
    return OdataResult(backend, entities, exports, core_runs, http, rss_before, rss_peak,
                       time.perf_counter() - started)


def _mib(value: int) -> str:
    return f"{value / 1024 / 1024:,.1f} MiB"


def _verdict(ok: bool) -> str:
    return "**PASS**" if ok else "**FAIL**"


def summary(results: list[OdataResult]) -> list[str]:
    """Issue 13's targets, one line per target and database."""
    lines = []
    for r in results:
        ratio, last = r.odata_rate / r.core_rate, r.last_page / r.first_page
        growth = r.rss_peak - r.rss_tenth
        lines += [
            f"{r.backend}: export {r.odata_rate:,.0f} rows/s against Core + json "
            f"{r.core_rate:,.0f} = {ratio:.2f}× (target ≥ {RATIO_TARGET:.2f}×): "
            f"{_word(ratio >= RATIO_TARGET)}",
            f"{r.backend}: last full page {r.last_page * 1000:,.1f} ms against the first "
            f"{r.first_page * 1000:,.1f} ms = {last:.2f}× (target ≤ {LAST_PAGE_TARGET:.2f}×): "
            f"{_word(last <= LAST_PAGE_TARGET)}",
            f"{r.backend}: worker RSS {_mib(r.rss_before)} before, peak {_mib(r.rss_peak)}, "
            f"+{_mib(growth)} after page 10 (target ≤ +{FLAT_MIB} MiB; over HTTP "
            f"{r.http_rate:,.0f} rows/s): {_word(growth <= FLAT_MIB * 1024 * 1024)}",
        ]
    return lines


def _word(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def _description() -> str:
    """The method, from the module docstring: its intro as one line, then the numbered list."""
    intro, items = __doc__.split("\n\n", 1)[1].strip().split("\n\n", 1)
    return intro.replace("\n", " ") + "\n\n" + re.sub(r"\n\s+", " ", items)


def render(results: list[OdataResult], facts: list[str]) -> str:
    lines = [*facts, "",
             _description(), "",
             "| Backend | Measure | Value | Baseline | Ratio | Target | Result |",
             "|---|---|---:|---:|---:|---|---|"]
    for r in results:
        ratio = r.odata_rate / r.core_rate
        last = r.last_page / r.first_page
        growth = r.rss_peak - r.rss_tenth
        lines += [
            f"| {r.backend} | export of {r.rows:,} rows, {len(r.exports[0].pages)} pages | "
            f"{r.odata_rate:,.0f} rows/s | Core + json {r.core_rate:,.0f} rows/s | "
            f"{ratio:.2f}× | ≥ {RATIO_TARGET:.2f}× | {_verdict(ratio >= RATIO_TARGET)} |",
            f"| {r.backend} | last full page | {r.last_page * 1000:,.1f} ms | first page "
            f"{r.first_page * 1000:,.1f} ms | {last:.2f}× | ≤ {LAST_PAGE_TARGET:.2f}× | "
            f"{_verdict(last <= LAST_PAGE_TARGET)} |",
            f"| {r.backend} | export over HTTP (gunicorn, Basic) | {r.http_rate:,.0f} rows/s | "
            f"Core + json {r.core_rate:,.0f} rows/s | {r.http_rate / r.core_rate:.2f}× | – | – |",
            f"| {r.backend} | worker RSS peak | {_mib(r.rss_peak)} | after page 10 "
            f"{_mib(r.rss_tenth)} (before {_mib(r.rss_before)}) | +{_mib(growth)} | "
            f"flat (≤ +{FLAT_MIB} MiB) | {_verdict(growth <= FLAT_MIB * 1024 * 1024)} |",
        ]
    lines.append("")
    for r in results:
        pages = r.exports[0].pages
        lines.append(f"- {r.backend} ({r.seconds:.0f} s): export runs "
                     f"{', '.join(f'{e.seconds:.2f} s' for e in r.exports)}; Core runs "
                     f"{', '.join(f'{s:.2f} s' for s in r.core_runs)}; over HTTP "
                     f"{r.http.seconds:.2f} s; page times of run 1: "
                     f"median {statistics.median(pages) * 1000:.1f} ms, max "
                     f"{max(pages) * 1000:.1f} ms")
    return "\n".join(lines) + "\n"

