"""Issue 12: a dashboard of 8 widgets over 100,000 entities, against the same aggregates in
SQLAlchemy Core.

On a database of its own (Samples seeded through Core, as ``--queries-only`` does), spread
over a year of creation dates and three statuses, with 20 storage locations holding 1% of
the samples each, 200 open Requests assigned to the reader and one ``Created`` event per
sample, the reader (whose visibility predicate applies) owns a dashboard of 8 widgets.

1. Each widget's data through ``GET /api/dashboard/{id}/widget/{index}`` against the same
   aggregate written in Core (the reader's visibility predicate spelled out) +
   ``json.dumps``, interleaved: p95 per widget (target < 100 ms) and the median ratio.
2. The whole page as a browser loads it: ``GET /dashboards/{id}`` and then each widget's
   fragment, one after the other: p95 of the sum (target < 300 ms), against the sum of the
   Core aggregates.
"""
from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import nh3
from markdown_it import MarkdownIt
from sqlalchemy import Integer, and_, cast, func, insert, literal, or_, select, text, update

from bench.harness import Bench, open_bench
from bench.report import machine_facts
from bench.results import Run, publish
from bench.serving import (
    forget_search_backlog,
    indexer_worker,
    planner_statistics_gathered,
    tallies_folded,
)
from bench.write import core_seed
from labapp.model import Entity, EntityEvent, Location, Request, Sample

TOPIC, TITLE = "dashboards", "A dashboard of 8 widgets (issue 12)"
WIDGET_P95_TARGET = 0.100
PAGE_P95_TARGET = 0.300
RUNS = 30
WARMUP = 3
LOCATIONS = 20
REQUESTS = 200
FILTER = "amount gt 10 and startswith(name,'S')"
NOTE = "## Freezer rota\n\n* **Mon**: Ana\n* **Tue**: Ben\n\n<script>alert(1)</script>"
_markdown = MarkdownIt("commonmark", {"html": False})


def _widget(plugin: str, config: dict[str, Any], x: int, y: int) -> dict[str, Any]:
    return {"plugin": {"app": "labapp", "plugin": plugin}, "config": config,
            "gridster": {"x": x, "y": y, "cols": 6, "rows": 4}}


WIDGETS = [
    _widget("status-counts", {"eClass": "Sample"}, 0, 0),
    _widget("created-per-week", {"eClass": "Sample", "weeks": 12}, 6, 0),
    _widget("saved-list", {"eClass": "Sample", "filter": FILTER,
                           "columns": ["id", "name", "amount"], "top": 10}, 0, 4),
    _widget("storage-usage", {}, 6, 4),
    _widget("my-requests", {}, 0, 8),
    _widget("recent-activity", {"limit": 10}, 6, 8),
    _widget("note", {"markdown": NOTE}, 0, 12),
    _widget("status-counts", {"eClass": "Request"}, 6, 12),
]


@dataclass
class WidgetResult:
    plugin: str
    api_runs: list[float]
    core_runs: list[float]

    @property
    def p95(self) -> float:
        return percentile(self.api_runs, 95)

    @property
    def ratio(self) -> float:
        return statistics.median(self.api_runs) / statistics.median(self.core_runs)

    @property
    def ok(self) -> bool:
        return self.p95 < WIDGET_P95_TARGET


@dataclass
class DashboardResult:
    backend: str
    entities: int
    widgets: list[WidgetResult] = field(default_factory=list)
    page_runs: list[float] = field(default_factory=list)
    page_core_runs: list[float] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def page_p95(self) -> float:
        return percentile(self.page_runs, 95)

    @property
    def ok(self) -> bool:
        return self.page_p95 < PAGE_P95_TARGET and all(w.ok for w in self.widgets)


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(1, -(-len(ordered) * p // 100)) - 1]


# --- seeding ----------------------------------------------------------------------------------

def _spread_dates(bench: Bench, connection: Any) -> None:
    days = "(CAST(substr(id, 8, 3) AS integer) % 365)"
    if bench.backend == "postgresql":
        shifted = f"created_utc - {days} * interval '1 day'"
    else:
        shifted = f"strftime('%Y-%m-%d %H:%M:%f', created_utc, '-' || {days} || ' days')"
    connection.execute(text(f"UPDATE entity SET created_utc = {shifted} "
                            "WHERE eclass = 'Sample'"))


def seed(bench: Bench, entities: int, log: Callable[[str], None]) -> None:
    core_seed(bench, entities, log=log)
    entity = Entity.__table__
    now = datetime.now(UTC)
    with bench.engine.begin() as connection:
        _spread_dates(bench, connection)
        for digit, status in (("1", "InProgress"), ("4", "InProgress"), ("7", "Completed")):
            connection.execute(update(entity).where(entity.c.eclass == "Sample",
                                                    entity.c.id.like(f"%{digit}"))
                               .values(status=status))
        base = dict.fromkeys(entity.c.keys())
        base.update(status="Initial", type="Other", user_id="admin",
                    department_id=bench.department, attributes={}, created_by="admin",
                    modified_by="admin", created_utc=now, modified_utc=now, version=1)
        locations = [f"LOCX{i:02d}" for i in range(LOCATIONS)]
        requests = [f"REQX{i:04d}" for i in range(REQUESTS)]
        connection.execute(insert(entity), [
            {**base, "id": i, "eclass": "Location", "name": f"Freezer {i}"} for i in locations]
            + [{**base, "id": i, "eclass": "Request", "name": f"Request {i}"} for i in requests])
        connection.execute(insert(Location.__table__), [
            {"id": i, "capacity": entities // 50, "location_type": "Freezer"} for i in locations])
        connection.execute(insert(Request.__table__), [
            {"id": i, "assignee_id": "bench-reader", "priority": "Normal"} for i in requests])
        for number, location in enumerate(locations):
            connection.execute(update(Sample.__table__)
                               .where(Sample.__table__.c.id.like(f"%{number:02d}"))
                               .values(location_id=location))
        ids = connection.execute(select(entity.c.id, entity.c.created_utc)
                                 .where(entity.c.eclass == "Sample")).all()
        for start in range(0, len(ids), 5000):
            connection.execute(insert(EntityEvent.__table__), [
                {"entity_id": entity_id, "kind": "Created", "user_id": "admin",
                 "timestamp_utc": created, "data": {}}
                for entity_id, created in ids[start:start + 5000]])
        if bench.backend == "postgresql":
            connection.execute(text("ANALYZE"))
    log(f"  [{bench.backend}] dates, statuses, {LOCATIONS} locations, {REQUESTS} requests, "
        f"{len(ids):,} events")


# --- the Core baselines -------------------------------------------------------------------------

def _visible(bench: Bench, table: Any = Entity.__table__) -> Any:
    """The reader's visibility predicate, spelled out (home department, no grants)."""
    return or_(table.c.eclass.in_(("User", "Department")),
               table.c.department_id.in_([bench.department]))


def core_baselines(bench: Bench) -> list[Callable[[Any], Any]]:
    """One function per widget: the same aggregate in Core, given a connection."""
    e, s, ev = Entity.__table__, Sample.__table__, EntityEvent.__table__
    loc, req = Location.__table__, Request.__table__

    def counts(eclass: str) -> Callable[[Any], Any]:
        return lambda c: [list(r) for r in c.execute(
            select(e.c.status, func.count()).where(e.c.eclass == eclass, _visible(bench))
            .group_by(e.c.status))]

    def weeks(c: Any) -> Any:
        today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        aware = today - timedelta(days=today.weekday()) - timedelta(weeks=11)
        start = aware.replace(tzinfo=None)
        if bench.backend == "postgresql":
            week = func.floor(func.extract("epoch", e.c.created_utc - literal(start)) / 604800)
        else:
            week = cast((func.julianday(e.c.created_utc)
                         - func.julianday(literal(start.isoformat(sep=" ")))) / 7, Integer)
        return [list(r) for r in c.execute(
            select(week, func.count()).where(e.c.eclass == "Sample", _visible(bench),
                                             e.c.created_utc >= aware).group_by(week))]

    def saved(c: Any) -> Any:
        where = and_(_visible(bench), e.c.eclass == "Sample", s.c.amount > 10,
                     e.c.name.like("S%"))
        joined = e.join(s, s.c.id == e.c.id)
        rows = [dict(r._mapping) for r in c.execute(
            select(e.c.id, e.c.name, s.c.amount).select_from(joined).where(where)
            .order_by(e.c.id).limit(11))]
        return rows[:10], len(rows) > 10

    def storage(c: Any) -> Any:
        stored = dict(c.execute(select(s.c.location_id, func.count())
                                .where(s.c.location_id.is_not(None))
                                .group_by(s.c.location_id)).all())
        return [(r.id, r.name, r.capacity, stored.get(r.id, 0)) for r in c.execute(
            select(e.c.id, e.c.name, loc.c.capacity).select_from(e.join(loc, loc.c.id == e.c.id))
            .where(_visible(bench), loc.c.capacity.is_not(None)).order_by(e.c.id).limit(50))]

    def mine(c: Any) -> Any:
        return [list(r) for r in c.execute(
            select(e.c.id, e.c.name, e.c.status, req.c.priority, req.c.due_date)
            .select_from(e.join(req, req.c.id == e.c.id))
            .where(req.c.assignee_id == "bench-reader", _visible(bench),
                   e.c.status.not_in(("Completed", "Rejected", "Canceled")))
            .order_by(req.c.due_date.is_(None), req.c.due_date, e.c.id).limit(50))]

    def activity(c: Any) -> Any:
        return [list(r) for r in c.execute(
            select(ev.c.kind, ev.c.user_id, ev.c.timestamp_utc, e.c.id, e.c.eclass, e.c.name)
            .select_from(ev.join(e, e.c.id == ev.c.entity_id)).where(_visible(bench))
            .order_by(ev.c.timestamp_utc.desc(), ev.c.id.desc()).limit(10))]

    def note(_c: Any) -> Any:
        return nh3.clean(_markdown.render(NOTE))

    return [counts("Sample"), weeks, saved, storage, mine, activity, note, counts("Request")]


# --- measuring ----------------------------------------------------------------------------------

def _get(bench: Bench, url: str) -> bytes:
    response = bench.client.get(url, headers=bench.reader_headers)
    if response.status_code != 200:
        raise RuntimeError(f"GET {url}: {response.status_code} {response.get_data()[:300]!r}")
    return response.get_data()


def _core(bench: Bench, baseline: Callable[[Any], Any]) -> float:
    start = time.perf_counter()
    with bench.engine.connect() as connection:
        json.dumps(baseline(connection), default=str)
    return time.perf_counter() - start


def measure(bench: Bench, entities: int, runs: int, log: Callable[[str], None]) -> Any:
    result = DashboardResult(bench.backend, entities)
    created = bench.client.post("/api/dashboard", headers=bench.reader_headers,
                                json={"name": "Bench", "widgets": WIDGETS})
    if created.status_code != 201:
        raise RuntimeError(f"dashboard not created: {created.get_json()}")
    board = created.get_json()["id"]
    baselines = core_baselines(bench)
    for index, widget in enumerate(WIDGETS):
        url = f"/api/dashboard/{board}/widget/{index}"
        for _ in range(WARMUP):
            _get(bench, url)
            _core(bench, baselines[index])
        api_runs, core_runs = [], []
        for _ in range(runs):
            start = time.perf_counter()
            _get(bench, url)
            api_runs.append(time.perf_counter() - start)
            core_runs.append(_core(bench, baselines[index]))
        result.widgets.append(WidgetResult(widget["plugin"]["plugin"], api_runs, core_runs))
        w = result.widgets[-1]
        log(f"  [{bench.backend}] widget {index} {w.plugin}: p95 {w.p95 * 1000:.1f} ms, "
            f"{w.ratio:.2f}x Core")
    page_urls = [f"/dashboards/{board}"] + [f"/dashboards/{board}/widget/{index}"
                                           for index in range(len(WIDGETS))]
    for run in range(WARMUP + runs):
        start = time.perf_counter()
        for url in page_urls:
            _get(bench, url)
        page = time.perf_counter() - start
        core = sum(_core(bench, baseline) for baseline in baselines)
        if run >= WARMUP:
            result.page_runs.append(page)
            result.page_core_runs.append(core)
    log(f"  [{bench.backend}] whole page: p95 {result.page_p95 * 1000:.1f} ms")
    return result


def run(backend: str, entities: int, runs: int = RUNS, log: Callable[[str], None] = print):
    started = time.perf_counter()
    log(f"[{backend}] dashboards (issue 12): fresh database, {entities:,} samples ...")
    with open_bench(backend) as bench:
        seed(bench, entities, log)
        forget_search_backlog(bench)
        # As `make run` serves: indexing off the request, the worker folds the entity
        # tallies of the seeded data and, on SQLite, gathers the planner statistics.
        with indexer_worker(bench):
            tallies_folded(bench)
            planner_statistics_gathered(bench)
            result = measure(bench, entities, runs, log)
    result.seconds = time.perf_counter() - started
    return result


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def render(results: list[DashboardResult], facts: list[str]) -> str:
    lines = [*facts, ""]
    for r in results:
        lines += [f"### {r.backend} (issue 12, {r.entities:,} samples, {r.seconds:.0f} s)", "",
                  "| widget | API p50 | API p95 | Core p50 | API / Core (median) | "
                  "target p95 < 100 ms |", "|---|---|---|---|---|---|"]
        for index, w in enumerate(r.widgets):
            lines.append(f"| {index} {w.plugin} | {_ms(statistics.median(w.api_runs))} | "
                         f"{_ms(w.p95)} | {_ms(statistics.median(w.core_runs))} | "
                         f"{w.ratio:.2f}x | {'PASS' if w.ok else 'FAIL'} |")
        page_core = statistics.median(r.page_core_runs)
        lines += ["", f"Whole page (the page, then its 8 widget fragments in turn): p50 "
                  f"{_ms(statistics.median(r.page_runs))}, p95 {_ms(r.page_p95)} against "
                  f"{_ms(page_core)} for the 8 Core aggregates "
                  f"({statistics.median(r.page_runs) / page_core:.2f}x); target p95 < 300 ms: "
                  f"**{'PASS' if r.page_p95 < PAGE_P95_TARGET else 'FAIL'}**", ""]
    return "\n".join(lines) + "\n"


def summary(results: list[DashboardResult]) -> list[str]:
    """Issue 12's targets: the whole page, and the slowest widget, per database."""
    lines = []
    for r in results:
        page_core = statistics.median(r.page_core_runs)
        slowest = max(r.widgets, key=lambda w: w.p95)
        passed = sum(w.ok for w in r.widgets)
        lines += [
            f"{r.backend}: whole page p95 {_ms(r.page_p95)} against {_ms(page_core)} for the "
            f"8 Core aggregates ({statistics.median(r.page_runs) / page_core:.2f}×; target p95 "
            f"< 300 ms): {'PASS' if r.page_p95 < PAGE_P95_TARGET else 'FAIL'}",
            f"{r.backend}: {passed} of {len(r.widgets)} widgets p95 < 100 ms, the slowest "
            f"{slowest.plugin} {_ms(slowest.p95)} ({slowest.ratio:.2f}× Core): "
            f"{'PASS' if passed == len(r.widgets) else 'FAIL'}",
        ]
    return lines


def main_part(backends: tuple[str, ...], entities: int, runs: int, save_to: Any,
              command: str) -> int:
    """``--dashboards-only``: run, print the report, publish it unless ``save_to`` is None."""
    load_before = os.getloadavg()
    results = [run(backend, entities, runs) for backend in backends]
    facts = machine_facts([], command, (load_before, os.getloadavg()))
    text_block = render(results, facts)
    print("\n" + text_block)
    if save_to is not None:
        written = publish(save_to, Run(TOPIC, TITLE, facts, summary(results), text_block))
        print(f"written to {written} and {save_to}")
    return 0 if all(r.ok for r in results) else 1
