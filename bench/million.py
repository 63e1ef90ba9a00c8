"""``python -m bench --million``: every capability measured at 1,000,000 Samples (issue 24).

Per backend, on a fresh database: the seed of :mod:`bench.million_seed` through Core, the
search index rebuilt (timed), the entity tallies folded and statistics gathered by the
worker as ``make run`` serves, then as a reader with row-level security (one sample in five
is theirs), each request timed through the Flask test client after a warm-up:

- list pages (500 rows, filtered, sorted): the first, a deep one by ``$skip`` (OFFSET) and,
  where the list answers ``nextSkipToken``, the same deep page by keyset; as admin too;
- get-one, suggest and unique; every kind of search, and freshness with the worker running;
- a dashboard of 8 widgets (:mod:`bench.dashboards`); an OData export (:mod:`bench.odata`);
- the storage tree and a box page;
- the soak: gunicorn and the worker under mixed load, their memory (:mod:`bench.soak`).

Each is reported against its Core baseline in the same run. Unless a module has a
hand-written one (dashboards, OData, search), the baseline is the statements the request
sent, captured and replayed on a bare connection, rows dumped with ``json.dumps``: what the
database costs, against which the API's own cost shows. A measure missing its target gets
the plans of its statements.
"""
from __future__ import annotations

import gc
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

from sqlalchemy import text

from bench import dashboards, million_seed, query, search, search_build
from bench.harness import (
    ADMIN_PASSWORD,
    READER,
    READER_PASSWORD,
    Bench,
    _login,
    open_bench,
)
from bench.million_served import million_soak, odata_export
from bench.query import percentile
from bench.read import _json_default, explain_statements
from bench.serving import indexer_worker, planner_statistics_gathered, tallies_folded
from labapp.db import db
from labapp.search.rebuild import rebuild_index
from labapp.serving import freeze_start_up

RUNS, WARMUP = 30, 3
DRAIN_CHANGES = 50_000  # entities changed at once, then drained into the built index
FILTER = "amount gt 10 and status ne 'Completed'"
ORDERBY = "name desc"
LIST_P95, LOOKUP_P95, SEARCH_P95, PAGE_P95 = 0.100, 0.030, 0.050, 0.100
DEEP_RATIO = 2.0


@dataclass
class Measure:
    """One request kind: API and Core times (seconds), its p95 target, the statements."""

    name: str
    target: float | None
    api: list[float] = field(default_factory=list)
    core: list[float] = field(default_factory=list)
    statements: list[tuple[str, Any]] = field(default_factory=list)
    plans: list[tuple[str, str]] = field(default_factory=list)
    note: str = ""
    collections: list[float] = field(default_factory=list)  # full GCs in the API runs (s)

    def p(self, q: float, core: bool = False) -> float:
        values = self.core if core else self.api
        return percentile(values, q) if values else float("nan")

    @property
    def ratio(self) -> float:
        return self.p(50) / self.p(50, core=True) if self.core else float("nan")

    @property
    def ok(self) -> bool:
        return self.target is None or self.p(95) < self.target


@dataclass
class MillionResult:
    backend: str
    entities: int
    seed_seconds: dict[str, float] = field(default_factory=dict)
    measures: list[Measure] = field(default_factory=list)
    deep: list[tuple[str, float, bool]] = field(default_factory=list)  # (what, ratio, ok)
    rebuild_seconds: float = 0.0
    rebuilt: int = 0
    drain_rate: float | None = None
    fresh: list[float] = field(default_factory=list)
    search_references: dict[str, dict[str, search.Latency]] = field(default_factory=dict)
    search_rates: dict[str, float] = field(default_factory=dict)
    dashboard: Any = None
    odata: Any = None
    soak: Any = None
    seconds: float = 0.0


# ---------------------------------------------------------------- timing a request

def _get(bench: Bench, url: str, caller: str = "reader") -> bytes:
    headers = bench.reader_headers if caller == "reader" else bench.admin_headers
    response = bench.client.get(url, headers=headers)
    if response.status_code != 200:
        raise RuntimeError(f"GET {url}: {response.status_code} {response.get_data()[:300]!r}")
    return response.get_data()


def captured(bench: Bench, call: Callable[[], Any]) -> list[tuple[str, Any]]:
    """Every reading statement ``call`` sends, with its parameters."""
    return query.captured(bench, call, lambda _statement: True)


def _any_json(value: Any) -> str:
    """As the API writes dates; anything else (a PostgreSQL sum's Decimal) as text."""
    try:
        return _json_default(value)
    except TypeError:
        return str(value)


def replay(bench: Bench, statements: list[tuple[str, Any]]) -> float:
    """Seconds to run ``statements`` on a bare connection and dump their rows as JSON."""
    started = time.perf_counter()
    with bench.engine.connect() as connection:
        rows = [[list(row) for row in connection.exec_driver_sql(statement, parameters)]
                for statement, parameters in statements]
        json.dumps(rows, default=_any_json)
        connection.rollback()
    return time.perf_counter() - started


@contextmanager
def full_collections(pauses: list[float]) -> Iterator[None]:
    """Appends to ``pauses`` the seconds of each full (generation 2) garbage collection the
    process makes inside the block: the suspect when one run of many is slow."""
    started: list[float] = []

    def watch(phase: str, info: dict[str, int]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            started.append(time.perf_counter())
        elif started:
            pauses.append(time.perf_counter() - started.pop())

    gc.callbacks.append(watch)
    try:
        yield
    finally:
        gc.callbacks.remove(watch)


def measure(bench: Bench, name: str, urls: list[str], target: float | None,
            caller: str = "reader", runs: int = RUNS) -> Measure:
    """Each of ``runs`` requests cycles through ``urls``; Core replays what each sent."""
    result = Measure(name, target)
    for url in urls[:WARMUP]:
        _get(bench, url, caller)
    sent = {url: captured(bench, lambda url=url: _get(bench, url, caller))
            for url in dict.fromkeys(urls[:runs])}
    for run in range(runs):
        url = urls[run % len(urls)]
        with full_collections(result.collections):
            started = time.perf_counter()
            _get(bench, url, caller)
            result.api.append(time.perf_counter() - started)
        result.core.append(replay(bench, sent[url]))
    result.statements = sent[urls[0]]
    return result


# ---------------------------------------------------------------- the measures

def list_url(skip: int, token: str | None = None, *, filtered: bool = True,
             counted: bool = True) -> str:
    query: dict[str, Any] = {"$orderby": ORDERBY, "$top": 500, "$skip": skip}
    if filtered:
        query["$filter"] = FILTER
    if token:
        query["$skiptoken"] = token
    if not counted:
        query["$count"] = "false"
    return "/api/entity/Sample?" + urlencode(query)


def _walk_to(bench: Bench, caller: str, skip: int) -> str | None:
    """The keyset token of the page at ``skip``, by following the list's next positions
    (None when the list answers no ``nextSkipToken``)."""
    position, token = 0, None
    while position < skip:
        body = json.loads(_get(bench, list_url(position, token, counted=False), caller))
        token = body.get("nextSkipToken")
        if token is None:
            return None
        position = body["nextSkip"]
    return token


def lists(bench: Bench, result: MillionResult, log: Callable[[str], None]) -> None:
    for caller in ("reader", "admin"):
        first = measure(bench, f"list page as {caller}, $skip=0", [list_url(0)], LIST_P95,
                        caller)
        total = json.loads(_get(bench, list_url(0), caller))["total"]
        far = (total * 9 // 10) // 500 * 500
        offset = measure(bench, f"list page as {caller}, $skip={far:,} (OFFSET)",
                         [list_url(far)], LIST_P95, caller, runs=10)
        unfiltered = measure(bench, f"list page as {caller}, no filter, $skip=0",
                             [list_url(0, filtered=False)], LIST_P95, caller)
        uncounted = measure(bench, f"list page as {caller}, $count=false, $skip=0",
                            [list_url(0, counted=False)], LIST_P95, caller)
        result.measures += [unfiltered, first, uncounted, offset]
        result.deep.append((offset.name, offset.p(50) / first.p(50),
                            offset.p(50) <= DEEP_RATIO * first.p(50)))
        started = time.perf_counter()
        token = _walk_to(bench, caller, far) if caller == "reader" else None
        if token is not None:
            keyset = measure(bench, f"list page as {caller}, $skip={far:,} (keyset)",
                             [list_url(far, token)], LIST_P95, caller)
            keyset.note = (f"reached by following {far // 500} pages in "
                           f"{time.perf_counter() - started:.0f} s")
            bare = measure(bench, f"list page as {caller}, $skip={far:,} (keyset, "
                                  "$count=false)", [list_url(far, token, counted=False)],
                           LIST_P95, caller)
            result.measures += [keyset, bare]
            result.deep += [(keyset.name, keyset.p(50) / first.p(50),
                             keyset.p(50) <= DEEP_RATIO * first.p(50)),
                            (bare.name, bare.p(50) / uncounted.p(50),
                             bare.p(50) <= DEEP_RATIO * uncounted.p(50))]
        for item in result.measures[-6:]:
            log(f"  [{bench.backend}] {item.name}: p50 {item.p(50) * 1000:.1f} / p95 "
                f"{item.p(95) * 1000:.1f} ms, Core {item.p(50, True) * 1000:.1f} ms")


def lookups(bench: Bench, result: MillionResult, entities: int) -> None:
    visible = entities // million_seed.READER_SHARE
    numbers = [million_seed.reader_sample((k * 7919) % visible) for k in range(RUNS)]
    names = [search._text(n)[0] for n in numbers]
    barcodes = [search._text(n)[2] for n in numbers]
    base = "/api/query"
    table = {
        "get-one": [f"/api/entity/Sample/{million_seed.sample_id(n)}" for n in numbers],
        "suggest entity by name prefix": [
            f"{base}/suggest/entity/Sample/{quote(name[:k + 3])}"
            for name, k in zip(names, range(RUNS), strict=True)],
        "suggest entity by name part": [f"{base}/suggest/entity/Sample/{name[-6:]}"
                                        for name in names],
        "suggest field unit": [f"{base}/suggest/field/Sample/unit/{q}"
                               for q in ("m", "mL", "µ", "zz")],
        "unique name (taken)": [f"{base}/unique/field/Sample/name/{quote(name)}"
                                for name in names],
        "unique barcode (free)": [f"{base}/unique/field/Sample/barcode/{code}X"
                                  for code in barcodes],
    }
    for name, urls in table.items():
        result.measures.append(measure(bench, name, urls, LOOKUP_P95))


def search_kinds(entities: int) -> dict[str, Callable[[int], tuple[str, str]]]:
    """bench/search.py's kinds; exact and like look for samples the reader may see."""
    visible = entities // million_seed.READER_SHARE

    def seen(run: int) -> int:
        return million_seed.reader_sample((run * 7919) % visible)
    kinds = search.kinds(visible)
    kinds["exact (barcode)"] = lambda run: (f"exact/BC{seen(run):08d}", "")
    kinds["like (name part)"] = lambda run: (f"like/{seen(run):06d}", "")
    return kinds


def searches(bench: Bench, result: MillionResult, entities: int,
             log: Callable[[str], None]) -> None:
    kinds = search_kinds(entities)
    for name, kind in kinds.items():
        latency = search.api_latency(bench, kind, RUNS)
        item = Measure(f"search: {name}", SEARCH_P95, api=latency.times)
        result.measures.append(item)
        log(f"  [{bench.backend}] search {name}: p95 {item.p(95) * 1000:.1f} ms")
    with bench.engine.connect() as connection:
        documents = [(row[0], " ".join(str(v) for v in row[1:] if v)) for row in
                     connection.execute(text("SELECT id, name, description, barcode "
                                             "FROM entity"))]
    rate, references = search.fts5(documents, kinds, RUNS)
    result.search_rates["SQLite FTS5"], result.search_references["SQLite FTS5"] = \
        rate, references
    if bench.backend == "postgresql":
        rate, references = search.postgresql(bench, documents, kinds, RUNS)
        result.search_rates["PostgreSQL full text"] = rate
        result.search_references["PostgreSQL full text"] = references
    del documents


def storage_pages(bench: Bench, result: MillionResult) -> None:
    result.measures.append(measure(bench, "storage tree", ["/storage"], PAGE_P95))
    boxes = [f"/storage/locations/{million_seed.box_id(k * 37 % 200)}" for k in range(RUNS)]
    result.measures.append(measure(bench, "box page (10 × 10, half visible)", boxes,
                                   PAGE_P95))


def explain_misses(bench: Bench, result: MillionResult) -> None:
    """The plans of the two slowest statements of each measure that missed its target."""
    for item in result.measures:
        if not item.ok and item.statements:
            slowest = sorted(item.statements, key=lambda sent: -replay(bench, [sent]))[:2]
            item.plans = explain_statements(bench, slowest)


# ---------------------------------------------------------------- one backend

def _prepared(bench: Bench, result: MillionResult, log: Callable[[str], None]) -> None:
    """Rebuild the search index (timed) and let the worker fold the tallies and gather
    statistics, as a freshly started ``make run`` would."""
    with bench.app.app_context():
        started = time.perf_counter()
        result.rebuilt = rebuild_index()
        result.rebuild_seconds = time.perf_counter() - started
        db.session.remove()
    log(f"  [{bench.backend}] search rebuild: {result.rebuilt:,} documents in "
        f"{result.rebuild_seconds:.0f} s ({result.rebuilt / result.rebuild_seconds:,.0f}/s)")
    with indexer_worker(bench):
        tallies_folded(bench)
        planner_statistics_gathered(bench)
    if bench.backend == "postgresql":  # what autovacuum does soon after a bulk load
        with bench.engine.connect() as connection:
            connection.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql(
                "VACUUM ANALYZE")


def _freshness(bench: Bench, result: MillionResult) -> None:
    with indexer_worker(bench, statistics=False):
        result.fresh = search.freshness(bench)


def fresh_tokens(bench: Bench) -> None:
    """Sign the reader and the administrator in again."""
    bench.reader_headers = _login(bench.client, READER, READER_PASSWORD)
    bench.admin_headers = _login(bench.client, "admin", ADMIN_PASSWORD)


def run(backend: str, entities: int, *, soak_minutes: float, measures: bool = True,
        log: Callable[[str], None] = print) -> MillionResult:
    """Seed, rebuild and drain, then (with ``measures``) every request kind, then the soak."""
    started = time.perf_counter()
    result = MillionResult(backend, entities)
    log(f"[{backend}] million: fresh database, seeding {entities:,} samples ...")
    with open_bench(backend) as bench:
        result.seed_seconds = million_seed.seed(bench, entities, log)
        log(f"  [{backend}] seeded: " + ", ".join(
            f"{part} {seconds:.0f} s" for part, seconds in result.seed_seconds.items()))
        _prepared(bench, result, log)
        result.drain_rate = search_build.measure_drain(bench, DRAIN_CHANGES, log)
        # Served processes freeze what start-up left; measured requests should not pay for
        # full collections walking the seed's leftovers either.
        log(f"  [{backend}] frozen after the seed: {freeze_start_up():,} objects")
        # An access token lives 20 minutes: each phase signs in afresh.
        phases: list[Callable[[], None]] = [
            lambda: lists(bench, result, log),
            lambda: lookups(bench, result, entities),
            lambda: searches(bench, result, entities, log),
            lambda: _freshness(bench, result),
            lambda: storage_pages(bench, result),
            lambda: setattr(result, "dashboard", dashboards.measure(bench, entities, RUNS, log)),
            lambda: setattr(result, "odata", odata_export(bench, log)),
        ]
        for phase in phases if measures else []:
            fresh_tokens(bench)
            phase()
        explain_misses(bench, result)
        if soak_minutes > 0:
            fresh_tokens(bench)
            result.soak = million_soak(bench, entities, soak_minutes, log)
    result.seconds = time.perf_counter() - started
    return result
