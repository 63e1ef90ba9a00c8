"""A filtered, ordered 500-entity page: ``GET /api/entity/Sample`` against Core + ``json.dumps``.

The baseline is the same SELECT written directly in SQLAlchemy Core: the same columns, the
same WHERE (the caller's visibility predicate and the filter, with the same SQL functions),
the same ORDER BY, LIMIT and OFFSET, plus the same ``count(*)``, and the rows turned into dicts
and dumped with ``json.dumps``. Both are measured interleaved after a warm-up; the median of
the runs is reported.
"""
from __future__ import annotations

import cProfile
import json
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any
from urllib.parse import urlencode

from sqlalchemy import and_, event, func, literal, or_, select, true

from bench.harness import BATCH, ApiVersusCore, Bench, timed
from labapp.model import Entity, Sample

FILTER = "amount gt 10 and startswith(name,'S')"
ORDERBY = "name desc"
RUNS = 7
# Warm-up runs per path before measuring (caches, connection pool, filter parse cache). Each
# request rolls its read-only transaction back at the end, and psycopg then forgets its
# prepared statements, so page queries are always planned with their parameter values.
WARMUP = 3

_entity = Entity.__table__
_sample = Sample.__table__
# The columns the API selects for Sample: every stored field (entity's, then sample's own).
_COLUMNS = [*_entity.c, *(column for column in _sample.c if column.key != "id")]


@dataclass
class PageCase:
    caller: str  # "reader" (department grant predicate) or "admin" (no predicate)
    skip: int


@dataclass
class PageResult(ApiVersusCore):
    case: PageCase
    api_runs: list[float]
    core_runs: list[float]
    total: int
    api_bytes: int
    core_bytes: int
    profile: cProfile.Profile | None = None


def page_url(skip: int) -> str:
    return "/api/entity/Sample?" + urlencode({"$filter": FILTER, "$orderby": ORDERBY,
                                              "$top": BATCH, "$skip": skip})


def _visibility(bench: Bench, caller: str):
    if caller == "admin":
        return true()
    return or_(_entity.c.eclass.in_(("User", "Department")),
               _entity.c.department_id.in_([bench.department]))


def core_statements(bench: Bench, case: PageCase):
    """The page and count SELECTs of ``case``, written in Core."""
    joined = _entity.join(_sample, _sample.c.id == _entity.c.id)
    where = and_(_visibility(bench, case.caller),
                 _sample.c.amount > 10.0,
                 func.lower(_entity.c.name).like(func.lower(literal("S%")), escape="/"))
    page = (select(*_COLUMNS).select_from(joined).where(where)
            .order_by(_entity.c.name.desc().nulls_first(), _sample.c.id.asc())
            .limit(BATCH).offset(case.skip))
    count = select(func.count()).select_from(joined).where(where)
    return page, count


def _json_default(value: Any) -> str:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
    if isinstance(value, date):
        return value.isoformat()
    raise TypeError(f"cannot serialise {type(value).__name__}")


def core_page(bench: Bench, case: PageCase) -> bytes:
    page, count = core_statements(bench, case)
    with bench.engine.connect() as connection:
        rows = [dict(row) for row in connection.execute(page).mappings()]
        total = connection.execute(count).scalar_one()
    return json.dumps({"data": rows, "total": total, "nextSkip": case.skip + BATCH},
                      default=_json_default).encode()


def api_page(bench: Bench, case: PageCase) -> bytes:
    headers = bench.reader_headers if case.caller == "reader" else bench.admin_headers
    response = bench.client.get(page_url(case.skip), headers=headers)
    if response.status_code != 200:
        raise RuntimeError(f"GET failed: {response.status_code} {response.get_data()[:300]!r}")
    return response.get_data()


def _check_same(api: bytes, core: bytes, case: PageCase) -> int:
    """Both paths returned the same entities in the same order; returns the total."""
    api_doc, core_doc = json.loads(api), json.loads(core)
    api_ids = [item["id"] for item in api_doc["data"]]
    core_ids = [item["id"] for item in core_doc["data"]]
    if api_ids != core_ids or api_doc["total"] != core_doc["total"] or len(api_ids) != BATCH:
        raise RuntimeError(f"{case}: API and Core pages differ ({len(api_ids)} vs "
                           f"{len(core_ids)} rows, totals {api_doc['total']} vs "
                           f"{core_doc['total']})")
    return api_doc["total"]


def measure(bench: Bench, case: PageCase, runs: int = RUNS,
            warmup: int = WARMUP) -> PageResult:
    for _ in range(max(warmup, 1)):
        api, core = api_page(bench, case), core_page(bench, case)
    total = _check_same(api, core, case)
    api_runs, core_runs = [], []
    for _ in range(runs):
        seconds, _ = timed(lambda: api_page(bench, case))
        api_runs.append(seconds)
        seconds, _ = timed(lambda: core_page(bench, case))
        core_runs.append(seconds)
    profile = cProfile.Profile()
    for _ in range(3):
        profile.runcall(api_page, bench, case)
    return PageResult(case, api_runs, core_runs, total, len(api), len(core), profile)


# --- EXPLAIN of the statements the API really sends ----------------------------------------

def captured_statements(bench: Bench, case: PageCase) -> list[tuple[str, Any]]:
    """The SELECTs over ``entity JOIN sample`` that one API page request executes."""
    seen: list[tuple[str, Any]] = []

    def record(_conn, _cursor, statement, parameters, _context, _many) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "JOIN sample" in statement:
            seen.append((statement, parameters))

    event.listen(bench.engine, "before_cursor_execute", record)
    try:
        api_page(bench, case)
    finally:
        event.remove(bench.engine, "before_cursor_execute", record)
    return seen


def explain(bench: Bench, case: PageCase) -> list[tuple[str, str]]:
    """``(statement, plan)`` for each SELECT of the API page request."""
    return explain_statements(bench, captured_statements(bench, case))


def explain_statements(bench: Bench, statements: list[tuple[str, Any]]) -> list[tuple[str, str]]:
    """``(statement, plan)`` for each captured statement: EXPLAIN ANALYZE on PostgreSQL,
    EXPLAIN QUERY PLAN (indented) on SQLite."""
    plans = []
    with bench.engine.connect() as connection:
        for statement, parameters in statements:
            if bench.backend == "postgresql":
                rows = connection.exec_driver_sql(
                    "EXPLAIN (ANALYZE, BUFFERS) " + statement, parameters).all()
                plan = "\n".join(row[0] for row in rows)
            else:
                rows = connection.exec_driver_sql(
                    "EXPLAIN QUERY PLAN " + statement, parameters).all()
                plan = "\n".join(f"{'  ' * _depth(rows, row)}{row[-1]}" for row in rows)
            plans.append((_shorten(statement), plan))
        connection.rollback()
    return plans


def _depth(rows, row) -> int:
    parents = {r[0]: r[1] for r in rows}
    depth, parent = 0, row[1]
    while parent:
        depth += 1
        parent = parents.get(parent, 0)
    return depth


def _shorten(statement: str) -> str:
    """The statement with its long column list elided."""
    head, sep, rest = statement.partition(" FROM ")
    if sep and len(head) > 80:
        head = head[:60] + " ..."
    return " ".join((head + sep + rest).split())
