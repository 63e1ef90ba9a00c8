"""Bulk create: ``POST /api/entity`` in batches of 500 against raw Core inserts of the same rows.

The two paths alternate batch by batch (API, Core, API, Core ...) so both write into tables of
the same size under the same machine load. The API batch is sent as pre-encoded JSON through
the Flask test client (the whole WSGI stack: auth, parsing, validation, sequences, audit trail,
response); the Core batch is ``connection.execute(insert(table), rows)`` for ``entity`` and
``sample`` with the same columns (audit columns included) and a commit per batch. Each path
writes half the entities.
"""
from __future__ import annotations

import cProfile
import json
import re
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sqlalchemy import event, insert
from sqlalchemy.engine import Engine

from bench.harness import BATCH, Bench, sample_values, timed
from labapp.model import Entity, Sample


@dataclass
class WriteResult:
    api_batches: list[float] = field(default_factory=list)   # seconds per batch of 500
    core_batches: list[float] = field(default_factory=list)
    round_ratios: list[float] = field(default_factory=list)  # Core time / API time per round
    profile: cProfile.Profile | None = None
    # Per path, per statement (shortened SQL): [executions, total seconds, slowest seconds],
    # timed around the driver's cursor call (server work plus the driver's own).
    statements: dict[str, dict[str, list[float]]] = field(default_factory=dict)

    @property
    def api_entities(self) -> int:
        return BATCH * len(self.api_batches)

    @property
    def core_entities(self) -> int:
        return BATCH * len(self.core_batches)

    @property
    def api_seconds(self) -> float:
        return sum(self.api_batches)

    @property
    def core_seconds(self) -> float:
        return sum(self.core_batches)

    @property
    def api_rate(self) -> float:
        return self.api_entities / self.api_seconds

    @property
    def core_rate(self) -> float:
        return self.core_entities / self.core_seconds

    @property
    def ratio(self) -> float:
        """API entities/s ÷ Core entities/s over the whole run (the target's measure)."""
        return self.api_rate / self.core_rate

    @property
    def round_ratio(self) -> float:
        """The median over rounds of Core time ÷ API time of adjacent batches: the same
        measure, insensitive to load that other processes put on the machine meanwhile."""
        return statistics.median(self.round_ratios)


def api_body(bench: Bench, numbers: range) -> bytes:
    items = [{"eClass": "Sample", "departmentID": bench.department, **sample_values(n)}
             for n in numbers]
    return json.dumps({"entities": items}).encode()


_ENTITY_COLUMNS = tuple(Entity.__table__.c.keys())
_SAMPLE_COLUMNS = tuple(Sample.__table__.c.keys())


def core_rows(bench: Bench, numbers: range) -> tuple[list[dict], list[dict]]:
    """The ``entity`` and ``sample`` rows of the samples ``numbers``, every column given."""
    now = datetime.now(UTC)
    entities, samples = [], []
    for n in numbers:
        values = sample_values(n)
        entity_id = f"SAMX{n:06d}"
        entity = dict.fromkeys(_ENTITY_COLUMNS)
        entity.update(id=entity_id, eclass="Sample", name=values["name"], status="Initial",
                      type="Other", user_id="admin", department_id=bench.department,
                      attributes=values["attributes"], created_by="admin",
                      modified_by="admin", created_utc=now, modified_utc=now, version=1)
        sample = dict.fromkeys(_SAMPLE_COLUMNS)
        sample.update(id=entity_id, amount=values["amount"], unit=values["unit"])
        entities.append(entity)
        samples.append(sample)
    return entities, samples


def post(bench: Bench, body: bytes) -> None:
    response = bench.client.post("/api/entity", data=body, content_type="application/json",
                                 headers=bench.admin_headers)
    if response.status_code != 201:
        raise RuntimeError(f"POST /api/entity failed: {response.status_code} "
                           f"{response.get_data(as_text=True)[:500]}")


def core_insert(engine: Engine, rows: tuple[list[dict], list[dict]]) -> None:
    entities, samples = rows
    with engine.connect() as connection:
        connection.execute(insert(Entity.__table__), entities)
        connection.execute(insert(Sample.__table__), samples)
        connection.commit()


def _statement_key(statement: str, many: bool) -> str:
    text = " ".join(statement.split())
    text = re.sub(r"\((?:%\([^)]*\)s(?:::\w+)?|\?)(?:, (?:%\([^)]*\)s(?:::\w+)?|\?))+\)",
                  "(…)", text)
    text = re.sub(r"^INSERT INTO (\S+) \(.*", r"INSERT INTO \1 (…) VALUES (…)", text)
    head, sep, rest = text.partition(" FROM ")
    if sep and len(head) > 60:
        text = head[:40] + " … FROM " + rest
    return ("executemany: " if many else "") + text[:160]


@contextmanager
def statement_times(engine: Engine,
                    result: WriteResult) -> Iterator[Callable[[str | None], None]]:
    """Time every statement by path; the caller names the current path (or None)."""
    with_path: dict[str, str | None] = {"path": None}
    started: list[float] = []

    def before(_conn, _cursor, _statement, _parameters, _context, _many) -> None:
        started.append(time.perf_counter())

    def after(_conn, _cursor, statement, _parameters, _context, many) -> None:
        seconds = time.perf_counter() - started.pop()
        path = with_path["path"]
        if path is None:
            return
        entry = result.statements.setdefault(path, defaultdict(lambda: [0, 0.0, 0.0]))[
            _statement_key(statement, many)]
        entry[0] += 1
        entry[1] += seconds
        entry[2] = max(entry[2], seconds)

    event.listen(engine, "before_cursor_execute", before)
    event.listen(engine, "after_cursor_execute", after)
    try:
        yield lambda path: with_path.update(path=path)
    finally:
        event.remove(engine, "before_cursor_execute", before)
        event.remove(engine, "after_cursor_execute", after)


def run(bench: Bench, total: int, *, log: Callable[[str], None] = print) -> WriteResult:
    """Write ``total`` samples, half through each path. The last API batch runs under the
    profiler and is left out of the rate (the profiler slows it down)."""
    result = WriteResult()
    rounds = total // (2 * BATCH)
    with statement_times(bench.engine, result) as on_path:
        for index in range(rounds):
            base = index * 2 * BATCH
            body = api_body(bench, range(base, base + BATCH))
            rows = core_rows(bench, range(base + BATCH, base + 2 * BATCH))
            if index == rounds - 1:
                on_path(None)
                result.profile = cProfile.Profile()
                result.profile.runcall(post, bench, body)
                api_seconds = None
            else:
                on_path("API")
                api_seconds, _ = timed(lambda body=body: post(bench, body))
                result.api_batches.append(api_seconds)
            on_path("Core")
            core_seconds, _ = timed(lambda rows=rows: core_insert(bench.engine, rows))
            on_path(None)
            result.core_batches.append(core_seconds)
            if api_seconds is not None:
                result.round_ratios.append(core_seconds / api_seconds)
            if (index + 1) % 20 == 0 or index == rounds - 1:
                log(f"  [{bench.backend}] write round {index + 1}/{rounds}: "
                    f"API {result.api_rate:,.0f}/s, Core {result.core_rate:,.0f}/s")
    return result


def core_seed(bench: Bench, total: int, *, log: Callable[[str], None] = print) -> WriteResult:
    """``--queries-only``: every sample through Core (no API writes, nothing compared)."""
    result = WriteResult()
    for base in range(0, total, BATCH):
        result.core_batches.append(timed(lambda base=base: core_insert(
            bench.engine, core_rows(bench, range(base, base + BATCH))))[0])
    log(f"  [{bench.backend}] {total:,} samples seeded through Core")
    return result
