"""Issue 5: a 3-query dataset against the same joins in Core, and the lookups' latency.

Runs on the database the rest of the benchmark seeded (100,000 Samples). It adds, in Core:
:data:`PROJECTS` projects, each with :data:`EXPERIMENTS` experiments of the reader's department
and :data:`HIDDEN` of another department (which the reader may not see), :data:`STEPS` steps
per experiment and :data:`PER_STEP` of the existing Samples linked to each step (``stepID``,
``experimentID``, ``projectID`` and a unit other than mL set on them), and a barcode on every
Sample (``BC-<id>``). So the dataset of one project answers 20 experiments → 100 steps →
2,000 samples to the reader (22 → 110 → 2,200 to admin), while the database holds over
100,000 entities.

1. ``POST /api/query/dataset`` (experiments of a project → their steps → their samples) as
   the reader (visibility predicate active) and as admin, against the same joins written in
   SQLAlchemy Core (``IN (SELECT ...)`` subqueries, the visibility predicate on every level,
   every column, ordered by id) + ``json.dumps``; interleaved, median after warm-up.
2. The lookups as the reader through the test client, each over a mix of realistic queries
   (prefixes, substrings, no hit, exact ids / names / barcodes): p50 and p95 per endpoint.
"""
from __future__ import annotations

import cProfile
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from sqlalchemy import and_, bindparam, event, insert, or_, select, text, true, update

from bench.harness import ApiVersusCore, Bench, timed
from bench.read import _json_default, explain_statements
from labapp.db import db
from labapp.model import Entity, Experiment, Project, Sample, Step

PROJECTS = 5
EXPERIMENTS = 20   # per project, in the reader's department
HIDDEN = 2         # per project, in another department (invisible to the reader)
STEPS = 5          # per experiment
PER_STEP = 20      # samples per step
RUNS = 9
WARMUP = 3
LOOKUP_REQUESTS = 120  # per endpoint (after a warm-up of 10)
DATASET_RATIO_TARGET = 3.0
LOOKUP_P95_TARGET = 0.050
UNITS = ("µL", "L", "mg", "g", "cells")

_entity = Entity.__table__
_project = Project.__table__
_experiment = Experiment.__table__
_step = Step.__table__
_sample = Sample.__table__


@dataclass
class DatasetResult(ApiVersusCore):
    caller: str
    api_runs: list[float]
    core_runs: list[float]
    counts: dict[str, int]
    api_bytes: int
    core_bytes: int
    profile: cProfile.Profile | None = None

    @property
    def ok(self) -> bool:
        return self.ratio <= DATASET_RATIO_TARGET


@dataclass
class LookupResult:
    name: str
    times: list[float]                      # seconds, every measured request
    by_kind: dict[str, list[float]]         # per kind of query
    slowest: tuple[str, float] = ("", 0.0)  # the URL of the slowest request
    plans: list[tuple[str, str]] = field(default_factory=list)
    profile: cProfile.Profile | None = None

    def percentile(self, p: float) -> float:
        return percentile(self.times, p)

    @property
    def ok(self) -> bool:
        return self.percentile(95) < LOOKUP_P95_TARGET


@dataclass
class QueryResult:
    entities: int
    seed_seconds: float
    datasets: list[DatasetResult]
    lookups: list[LookupResult]
    dataset_plans: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))
    return ordered[int(rank) - 1]


# --- seeding --------------------------------------------------------------------------------

def _other_department(bench: Bench) -> str:
    created = bench.client.post("/api/entity", headers=bench.admin_headers, json={
        "entities": [{"eClass": "Department", "name": "Benchmark elsewhere"}]})
    if created.status_code != 201:
        raise RuntimeError(f"department not created: {created.get_json()}")
    return created.get_json()["entities"][0]["id"]


def _entity_row(entity_id: str, eclass: str, name: str, department: str,
                project: str | None, now: datetime) -> dict[str, Any]:
    row = dict.fromkeys(_entity.c.keys())
    row.update(id=entity_id, eclass=eclass, name=name, status="Initial", type="Other",
               user_id="admin", department_id=department, project_id=project, attributes={},
               created_by="admin", modified_by="admin", created_utc=now, modified_utc=now,
               version=1)
    return row


def seed(bench: Bench, samples: int) -> tuple[list[str], int]:
    """Projects, experiments, steps and links; returns the project ids and the entity count.
    At most half the samples are linked (fewer projects with ``--quick``)."""
    per_project = (EXPERIMENTS + HIDDEN) * STEPS * PER_STEP
    count = max(1, min(PROJECTS, samples // (2 * per_project)))
    elsewhere = _other_department(bench)
    now = datetime.now(UTC)
    entities, projects, experiments, steps, links = [], [], [], [], []
    project_ids = []
    for p in range(count):
        project_id = f"PRJX{p:04d}"
        project_ids.append(project_id)
        entities.append(_entity_row(project_id, "Project", f"Bench project {p}",
                                    bench.department, project_id, now))
        projects.append({"id": project_id})
        for e in range(EXPERIMENTS + HIDDEN):
            experiment_id = f"EXPX{p:02d}{e:03d}"
            department = bench.department if e < EXPERIMENTS else elsewhere
            entities.append(_entity_row(experiment_id, "Experiment",
                                        f"Experiment {p}-{e}", department, project_id, now))
            experiments.append({"id": experiment_id, "start_date": None, "end_date": None})
            for s in range(STEPS):
                step_id = f"STPX{p:02d}{e:03d}{s}"
                entities.append(_entity_row(step_id, "Step", f"Step {p}-{e}-{s}",
                                            department, project_id, now))
                steps.append({"id": step_id, "experiment_id": experiment_id,
                              "step_index": s, "start_date": None, "end_date": None})
                links.append((project_id, experiment_id, step_id))
    with bench.app.app_context(), db.engine.begin() as connection:
        connection.execute(insert(_entity), entities)
        connection.execute(insert(_project), projects)
        connection.execute(insert(_experiment), experiments)
        connection.execute(insert(_step), steps)
        sample_ids = list(connection.scalars(select(_sample.c.id).order_by(_sample.c.id)))
        needed = len(links) * PER_STEP
        stride = len(sample_ids) // needed
        if stride < 1:
            raise RuntimeError(f"{len(sample_ids)} samples are too few for {needed} links")
        chosen = sample_ids[::stride][:needed]
        sample_rows, entity_rows = [], []
        for index, sample_id in enumerate(chosen):
            project_id, experiment_id, step_id = links[index // PER_STEP]
            sample_rows.append({"b_id": sample_id, "b_step": step_id,
                                "b_experiment": experiment_id,
                                "b_unit": UNITS[index % len(UNITS)]})
            entity_rows.append({"b_id": sample_id, "b_project": project_id})
        connection.execute(update(_sample).where(_sample.c.id == bindparam("b_id")).values(
            step_id=bindparam("b_step"), experiment_id=bindparam("b_experiment"),
            unit=bindparam("b_unit")), sample_rows)
        connection.execute(update(_entity).where(_entity.c.id == bindparam("b_id")).values(
            project_id=bindparam("b_project")), entity_rows)
        connection.execute(update(_entity).where(_entity.c.eclass == "Sample").values(
            barcode=text("'BC-' || entity.id")))
        total = connection.scalar(select(text("count(*)")).select_from(_entity))
    return project_ids, total


# --- the dataset ------------------------------------------------------------------------------

def dataset_body(project: str) -> list[dict[str, Any]]:
    return [
        {"collection": "exps", "eClass": "Experiment",
         "filters": [{"field": "projectID", "value": project}]},
        {"collection": "steps", "eClass": "Step",
         "filters": [{"field": "experimentID", "in": "exps.id"}]},
        {"collection": "samples", "eClass": "Sample",
         "filters": [{"field": "stepID", "in": "steps.id"}]},
    ]


def api_dataset(bench: Bench, caller: str, project: str) -> bytes:
    headers = bench.reader_headers if caller == "reader" else bench.admin_headers
    response = bench.client.post("/api/query/dataset", json=dataset_body(project),
                                 headers=headers)
    if response.status_code != 200:
        raise RuntimeError(f"dataset failed: {response.status_code} "
                           f"{response.get_data()[:300]!r}")
    return response.get_data()


def core_statements(bench: Bench, caller: str, project: str):
    """The three SELECTs, each level joined to the previous one in SQL."""
    def level(table):
        e = _entity.alias()
        joined = e.join(table, table.c.id == e.c.id)
        columns = [*e.c, *(c for c in table.c if c.key != "id")]
        visible = true() if caller == "admin" else _visibility_of(bench, e)
        return e, joined, columns, visible

    e1, j1, c1, v1 = level(_experiment)
    exps_where = and_(v1, e1.c.project_id == project)
    exps = select(*c1).select_from(j1).where(exps_where).order_by(e1.c.id)
    exp_ids = select(e1.c.id).select_from(j1).where(exps_where)

    e2, j2, c2, v2 = level(_step)
    steps_where = and_(v2, _step.c.experiment_id.in_(exp_ids))
    steps = select(*c2).select_from(j2).where(steps_where).order_by(e2.c.id)
    step_ids = select(e2.c.id).select_from(j2).where(steps_where)

    e3, j3, c3, v3 = level(_sample)
    samples = (select(*c3).select_from(j3).where(v3, _sample.c.step_id.in_(step_ids))
               .order_by(e3.c.id))
    return {"exps": exps, "steps": steps, "samples": samples}


def _visibility_of(bench: Bench, entity):
    """The reader's predicate (as ``readable`` builds it) on an alias of ``entity``."""
    return or_(entity.c.eclass.in_(("User", "Department")),
               entity.c.department_id.in_([bench.department]))


def core_dataset(bench: Bench, caller: str, project: str) -> bytes:
    statements = core_statements(bench, caller, project)
    with bench.engine.connect() as connection:
        answer = {key: [dict(row) for row in connection.execute(statement).mappings()]
                  for key, statement in statements.items()}
    return json.dumps(answer, default=_json_default).encode()


def _check_same(api: bytes, core: bytes, caller: str) -> dict[str, int]:
    api_doc, core_doc = json.loads(api), json.loads(core)
    counts = {}
    for key in ("exps", "steps", "samples"):
        api_ids = [row["id"] for row in api_doc[key]]
        core_ids = [row["id"] for row in core_doc[key]]
        if api_ids != core_ids:
            raise RuntimeError(f"dataset as {caller}: {key} differ ({len(api_ids)} vs "
                               f"{len(core_ids)} rows)")
        counts[key] = len(api_ids)
    if caller == "reader":
        expected = (EXPERIMENTS, EXPERIMENTS * STEPS, EXPERIMENTS * STEPS * PER_STEP)
    else:
        every = EXPERIMENTS + HIDDEN
        expected = (every, every * STEPS, every * STEPS * PER_STEP)
    if tuple(counts.values()) != expected:
        raise RuntimeError(f"dataset as {caller}: {counts}, expected {expected}")
    return counts


def measure_dataset(bench: Bench, caller: str, projects: list[str], runs: int,
                    warmup: int) -> DatasetResult:
    """Interleaved API and Core runs, rotating over the projects (same sizes each)."""
    for index in range(max(warmup, 1)):
        project = projects[index % len(projects)]
        api, core = api_dataset(bench, caller, project), core_dataset(bench, caller, project)
    counts = _check_same(api, core, caller)
    api_runs, core_runs = [], []
    for index in range(runs):
        project = projects[index % len(projects)]
        seconds, _ = timed(lambda project=project: api_dataset(bench, caller, project))
        api_runs.append(seconds)
        seconds, _ = timed(lambda project=project: core_dataset(bench, caller, project))
        core_runs.append(seconds)
    profile = cProfile.Profile()
    for index in range(3):
        profile.runcall(api_dataset, bench, caller, projects[index % len(projects)])
    return DatasetResult(caller, api_runs, core_runs, counts, len(api), len(core), profile)


# --- the lookups ---------------------------------------------------------------------------------

def captured(bench: Bench, call: Callable[[], Any],
             keep: Callable[[str], bool]) -> list[tuple[str, Any]]:
    """The reading statements (SELECT, WITH) ``call`` sends that ``keep`` accepts, with
    their parameters."""
    seen: list[tuple[str, Any]] = []

    def record(_conn, _cursor, statement, parameters, _context, _many) -> None:
        if statement.lstrip()[:6].upper() in ("SELECT", "WITH R") and keep(statement):
            seen.append((statement, parameters))

    event.listen(bench.engine, "before_cursor_execute", record)
    try:
        call()
    finally:
        event.remove(bench.engine, "before_cursor_execute", record)
    return seen


def _sample_facts(bench: Bench) -> tuple[list[str], list[str]]:
    """Some sample ids (spread over the table) and their names."""
    with bench.engine.connect() as connection:
        rows = connection.execute(select(_entity.c.id, _entity.c.name)
                                  .where(_entity.c.eclass == "Sample")
                                  .order_by(_entity.c.id)).all()
    picked = rows[::max(1, len(rows) // 40)][:40]
    return [row[0] for row in picked], [row[1] for row in picked]


def lookup_queries(bench: Bench) -> dict[str, list[tuple[str, str]]]:
    """Per endpoint, ``LOOKUP_REQUESTS`` ``(kind, url)``, kinds mixed round-robin."""
    ids, names = _sample_facts(bench)
    numbers = [name.split("-", 1)[1] for name in names]  # the 7 digits of "S-0123456"
    base = "/api/query"

    def cycle(kinds: dict[str, list[str]], template: str) -> list[tuple[str, str]]:
        out, order = [], list(kinds)
        for index in range(LOOKUP_REQUESTS):
            kind = order[index % len(order)]
            values = kinds[kind]
            value = values[(index // len(order)) % len(values)]
            out.append((kind, template.format(quote(value, safe=""))))
        return out

    entity = {
        "name prefix (S-01)": [f"S-{n[:2]}" for n in numbers],
        "name prefix (S-0123)": [f"S-{n[:4]}" for n in numbers],
        "substring (4 digits)": [n[2:6] for n in numbers],
        "exact name": names,
        "exact id": ids,
        "exact barcode": [f"BC-{i}" for i in ids],
        "no hit": [f"zz{n}q" for n in numbers],
        "one letter (s)": ["s", "S", "x"],
        "two letters, no hit": ["qz", "zq", "jq"],
    }
    unit = {"prefix": ["m", "µ", "c", "g"], "exact": ["mL", "µL", "L", "mg", "cells"],
            "substring": ["el", "L", "ll"], "no hit": ["kg", "zz", "nmol"]}
    unique_name = {"taken (exact name)": names, "free": [f"{n}-free" for n in names],
                   "case differs": [n.lower() for n in names]}
    unique_barcode = {"taken": [f"BC-{i}" for i in ids], "free": [f"BC-{i}-X" for i in ids]}
    return {
        "suggest/entity/Sample/<q>": cycle(entity, base + "/suggest/entity/Sample/{}"),
        "suggest/field/Sample/unit/<q>": cycle(unit, base + "/suggest/field/Sample/unit/{}"),
        "unique/field/Sample/name/<v>": cycle(unique_name,
                                              base + "/unique/field/Sample/name/{}"),
        "unique/field/Sample/barcode/<v>": cycle(unique_barcode,
                                                 base + "/unique/field/Sample/barcode/{}"),
    }


def _get(bench: Bench, url: str) -> bytes:
    response = bench.client.get(url, headers=bench.reader_headers)
    if response.status_code != 200:
        raise RuntimeError(f"GET {url}: {response.status_code} {response.get_data()[:300]!r}")
    return response.get_data()


def measure_lookup(bench: Bench, name: str, requests: list[tuple[str, str]]) -> LookupResult:
    for _, url in requests[:10]:
        _get(bench, url)
    times: list[float] = []
    by_kind: dict[str, list[float]] = {}
    slowest = ("", 0.0)
    for kind, url in requests:
        seconds, _ = timed(lambda url=url: _get(bench, url))
        times.append(seconds)
        by_kind.setdefault(kind, []).append(seconds)
        if seconds > slowest[1]:
            slowest = (url, seconds)
    result = LookupResult(name, times, by_kind, slowest)
    # The plan of the slowest kind's first query, and a profile of that kind.
    worst_kind = max(by_kind, key=lambda k: statistics.median(by_kind[k]))
    url = next(u for k, u in requests if k == worst_kind)
    result.plans = explain_statements(bench, captured(bench, lambda: _get(bench, url),
                                            lambda s: "FROM entity" in s or "sample" in s))
    result.profile = cProfile.Profile()
    for kind, u in requests:
        if kind == worst_kind:
            result.profile.runcall(_get, bench, u)
    return result


def run(bench: Bench, entities: int, runs: int = RUNS, warmup: int = WARMUP,
        log: Callable[[str], None] = print) -> QueryResult:
    started = time.perf_counter()
    projects, total = seed(bench, entities)
    with bench.app.app_context():
        if bench.backend == "postgresql":
            with db.engine.connect() as connection:
                connection = connection.execution_options(isolation_level="AUTOCOMMIT")
                connection.exec_driver_sql("ANALYZE")
        db.session.remove()
    seeded = time.perf_counter() - started
    log(f"  [{bench.backend}] query data seeded in {seeded:.1f} s ({total:,} entities)")
    datasets = []
    for caller in ("reader", "admin"):
        result = measure_dataset(bench, caller, projects, runs, warmup)
        datasets.append(result)
        log(f"  [{bench.backend}] dataset as {caller} {result.counts}: API "
            f"{result.api * 1000:.1f} ms, Core {result.core * 1000:.1f} ms, "
            f"{result.ratio:.2f}x")
    first_project = captured(bench, lambda: api_dataset(bench, "reader", projects[0]),
                             lambda s: "JOIN" in s)
    plans = explain_statements(bench, first_project)
    lookups = []
    for name, requests in lookup_queries(bench).items():
        result = measure_lookup(bench, name, requests)
        lookups.append(result)
        log(f"  [{bench.backend}] {name}: p50 {result.percentile(50) * 1000:.1f} ms, "
            f"p95 {result.percentile(95) * 1000:.1f} ms ({len(result.times)} requests)")
    return QueryResult(total, seeded, datasets, lookups, plans,
                       time.perf_counter() - started)
