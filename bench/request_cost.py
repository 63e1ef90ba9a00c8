"""Issue 33 §6: the fixed cost of one request, against a bare route and the same SQL in Core.

On a database of its own (``SEEDED`` Samples seeded through Core, one more created and
edited twice through the API so that it carries audit events), the reader calls with a
personal access token (Basic ``username:PAT…``), each on a new connection as a script does:

- get-one: ``GET /api/entity/Sample/{id}`` (the entity, its files, events and auditEvents);
- list-100: ``GET /api/entity/Sample?$top=100``;
- bell: ``GET /notifications/bell`` (the unread count every page polls).

Each is measured against two floors, interleaved round by round:

(a) bare: a route of a bare Flask application (:mod:`bench.bare`) answering a small JSON
    document, served by the same gunicorn settings (``make run``'s two sync workers);
(b) Core: the very statements the request sends (captured with a ``before_cursor_execute``
    listener through the test client), replayed in one pooled connection with
    ``exec_driver_sql`` and every row fetched.

The ratio is the request's p50 over (a)'s p50 plus (b)'s p50: what the application adds to
the HTTP round trip and to the SQL it has to send.

The application is served with the API rate limits on (issue 36 §4, quotas out of reach so
that nothing is refused), as installs run by default; each round also sends get-one to a
second gunicorn with every limit off, and the report gives what the limiter adds (its one
statement per request). ``python -m bench.request_cost`` runs it
on PostgreSQL (``--backend both`` adds SQLite) and publishes the run (:mod:`bench.results`).
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import event, text

from bench import bare
from bench.harness import READER, Bench, open_bench
from bench.million_served import server_environment
from bench.query import percentile
from bench.report import machine_facts
from bench.results import PAGE, Run, publish
from bench.server import basic, gunicorn, request
from bench.serving import forget_search_backlog
from bench.write import core_seed
from labapp.access.actor import Actor
from labapp.auth import pats
from labapp.db import db, transaction

TOPIC, TITLE = "request-cost", "The fixed cost of one request (issue 33 §6)"
SEEDED = 10_000
ROUNDS = 100
WARMUP = 10
GET_ONE_TARGET = 0.004  # seconds, p50 on PostgreSQL
RATIO_TARGET = 1.5      # request p50 ≤ 1.5 × (bare p50 + Core p50)
TRANSACTION_CONTROL = re.compile(r"\s*(BEGIN|COMMIT|ROLLBACK)\b", re.IGNORECASE)
Statement = tuple[str, Any]


@dataclass(frozen=True)
class Kind:
    """One request measured: its name in the report and its path."""

    name: str
    path: str


@dataclass
class KindResult:
    """The times (seconds) of one kind of request and of its two floors."""

    kind: Kind
    statements: list[Statement]
    app: list[float] = field(default_factory=list)
    bare: list[float] = field(default_factory=list)
    core: list[float] = field(default_factory=list)
    unlimited: list[float] = field(default_factory=list)

    @staticmethod
    def p(values: list[float], q: float) -> float:
        return percentile(values, q)

    @property
    def ratio(self) -> float:
        """The request's p50 over the bare route's p50 plus the Core replay's p50."""
        return self.p(self.app, 50) / (self.p(self.bare, 50) + self.p(self.core, 50))

    @property
    def limiter_ratio(self) -> float:
        """The request's p50 with the rate limits on over its p50 with them off."""
        return self.p(self.app, 50) / self.p(self.unlimited, 50)


@dataclass
class CostResult:
    backend: str
    version: str
    kinds: list[KindResult]
    seconds: float


def _reader_pat(bench: Bench) -> dict[str, str]:
    """The reader's Basic ``username:PAT…`` header."""
    with bench.app.app_context():
        try:
            with transaction():
                value = pats.create(Actor(user_id=READER), "request cost", None).value
        finally:
            db.session.remove()
    return basic(READER, value)


def _target_sample(bench: Bench) -> str:
    """A Sample of the reader's department created and edited twice through the API, so
    that its answer holds audit events as a real one does."""
    created = bench.client.post("/api/entity", headers=bench.admin_headers, json={
        "entities": [{"eClass": "Sample", "name": "S-request-cost",
                      "departmentID": bench.department, "amount": 12.5, "unit": "mL"}]})
    if created.status_code != 201:
        raise RuntimeError(f"sample not created: {created.get_data()[:300]!r}")
    sample = str(created.get_json()["entities"][0]["id"])
    for amount in (13.5, 14.5):
        edited = bench.client.post("/api/entity", headers=bench.admin_headers, json={
            "entities": [{"eClass": "Sample", "id": sample, "amount": amount}]})
        if edited.status_code not in (200, 201):
            raise RuntimeError(f"sample not edited: {edited.get_data()[:300]!r}")
    return sample


def captured(bench: Bench, path: str, headers: dict[str, str]) -> list[Statement]:
    """The statements (with their parameters) one request for ``path`` sends, in order,
    after two warm-up requests (caches filled, a PAT's last use just written). Transaction
    control (the unit of work's ``BEGIN``) is left out: the replay's connection begins and
    ends its own transaction."""
    for _ in range(2):
        _in_process(bench, path, headers)
    seen: list[Statement] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any,
               _many: bool) -> None:
        if not TRANSACTION_CONTROL.match(statement):
            seen.append((statement, parameters))

    event.listen(bench.engine, "before_cursor_execute", record)
    try:
        _in_process(bench, path, headers)
    finally:
        event.remove(bench.engine, "before_cursor_execute", record)
    return seen


def _in_process(bench: Bench, path: str, headers: dict[str, str]) -> None:
    response = bench.client.get(path, headers=headers)
    if response.status_code != 200:
        raise RuntimeError(f"GET {path}: {response.status_code} {response.get_data()[:300]!r}")


def replay(bench: Bench, statements: list[Statement]) -> None:
    """The statements sent again in one pooled connection, every row fetched, rolled back
    (as a read unit ends)."""
    with bench.engine.connect() as connection:
        for statement, parameters in statements:
            result = connection.exec_driver_sql(statement, parameters)
            if result.returns_rows:
                result.all()
        connection.rollback()


RATE_LIMITS = ("RATE_LIMIT_PER_TOKEN", "RATE_LIMIT_PER_USER", "RATE_LIMIT_PER_ADDRESS")
OUT_OF_REACH = "1000000000"


def limited(environment: dict[str, str]) -> dict[str, str]:
    """``environment`` with the rate limits on, at quotas no run reaches: the limiter does
    all its work, and no request is refused however many rounds run."""
    return {**environment, **{f"LABAPP_{name}": OUT_OF_REACH for name in RATE_LIMITS}}


def unlimited(environment: dict[str, str]) -> dict[str, str]:
    """``environment`` with every rate limit off."""
    return {**environment, **{f"LABAPP_{name}": "0" for name in RATE_LIMITS}}


def _timed_get(server: Any, path: str, headers: dict[str, str]) -> float:
    """One GET on a new connection (a sync gunicorn worker closes it after each answer)."""
    connection = server.connection()
    start = time.perf_counter()
    status, body = request(connection, "GET", path, headers)
    elapsed = time.perf_counter() - start
    connection.close()
    if status != 200:
        raise RuntimeError(f"GET {path}: {status} {body[:300]!r}")
    return elapsed


def _timed_replay(bench: Bench, statements: list[Statement]) -> float:
    start = time.perf_counter()
    replay(bench, statements)
    return time.perf_counter() - start


def run(backend: str, rounds: int = ROUNDS, log: Callable[[str], None] = print) -> CostResult:
    started = time.perf_counter()
    log(f"[{backend}] request cost: fresh database, {SEEDED:,} samples, {rounds} rounds ...")
    with open_bench(backend) as bench:
        core_seed(bench, SEEDED, log=log)
        forget_search_backlog(bench)
        sample = _target_sample(bench)
        headers = _reader_pat(bench)
        with bench.engine.connect() as connection:
            if backend == "postgresql":
                connection.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql(
                    "ANALYZE")
                version = connection.scalar(text("SELECT version()")).split(" on ")[0]
            else:
                version = "SQLite " + connection.scalar(text("SELECT sqlite_version()"))
        kinds = [Kind("get-one", f"/api/entity/Sample/{sample}"),
                 Kind("list-100", "/api/entity/Sample?$top=100"),
                 Kind("bell", "/notifications/bell")]
        results = [KindResult(kind, captured(bench, kind.path, headers)) for kind in kinds]
        environment = server_environment(bench)
        get_one = results[0]
        with gunicorn(limited(environment)) as server, gunicorn(
                environment, application="bench.bare:create_app()") as floor, gunicorn(
                unlimited(environment)) as without_limits:
            for number in range(WARMUP + rounds):
                for result in results:
                    times = (_timed_get(server, result.kind.path, headers),
                             _timed_get(floor, bare.PATH, {}),
                             _timed_replay(bench, result.statements))
                    if number >= WARMUP:
                        result.app.append(times[0])
                        result.bare.append(times[1])
                        result.core.append(times[2])
                unlimited_time = _timed_get(without_limits, get_one.kind.path, headers)
                if number >= WARMUP:
                    get_one.unlimited.append(unlimited_time)
    for result in results:
        log(f"  [{backend}] {result.kind.name}: p50 {_ms(result.p(result.app, 50))}, bare "
            f"{_ms(result.p(result.bare, 50))}, Core {_ms(result.p(result.core, 50))} "
            f"({len(result.statements)} statements), {result.ratio:.2f}×")
    get_one = results[0]
    log(f"  [{backend}] get-one without rate limits: p50 {_ms(get_one.p(get_one.unlimited, 50))}"
        f", with them {get_one.limiter_ratio:.3f}×")
    return CostResult(backend, version, results, time.perf_counter() - started)


# --- the report ----------------------------------------------------------------------------

def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.2f} ms"


def _get_one(result: CostResult) -> KindResult:
    return next(kind for kind in result.kinds if kind.kind.name == "get-one")


def _passes(result: CostResult) -> bool:
    get_one = _get_one(result)
    return get_one.p(get_one.app, 50) <= GET_ONE_TARGET and get_one.ratio <= RATIO_TARGET


def _short(statement: str) -> str:
    flat = " ".join(statement.split())
    head, sep, rest = flat.partition(" FROM ")
    if sep and len(head) > 70:
        flat = head[:50] + " … FROM " + rest
    return flat if len(flat) <= 220 else flat[:217] + "…"


def render(results: list[CostResult], facts: list[str], rounds: int) -> str:
    lines = [*facts, "",
             f"`bench/request_cost.py`: {SEEDED:,} Samples seeded through Core, the reader "
             "calling with a PAT (Basic `username:PAT…`), a new connection per request. Each "
             f"round (after {WARMUP} warm-ups, {rounds} rounds) sends each request to "
             "gunicorn (`make run`'s two sync workers), then `GET /bare` to a bare Flask app "
             "under the same gunicorn settings (a), then replays in Core the statements the "
             "request sent (b). Ratio: request p50 / (a p50 + b p50). Target: get-one p50 ≤ "
             f"{GET_ONE_TARGET * 1000:.0f} ms on PostgreSQL and ≤ {RATIO_TARGET}× of (a)+(b). "
             "The application runs with the API rate limits on (quotas out of reach); each "
             "round also sends get-one to a second gunicorn with every limit off.",
             ""]
    for r in results:
        lines += [f"### {r.backend} ({r.version}; {r.seconds:.0f} s in all)", "",
                  "| Request | Statements | p50 | p95 | (a) bare p50 | (b) Core p50 | (b) Core "
                  "p95 | Ratio |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for k in r.kinds:
            lines.append(f"| {k.kind.name} `{k.kind.path}` | {len(k.statements)} "
                         f"| {_ms(k.p(k.app, 50))} | {_ms(k.p(k.app, 95))} "
                         f"| {_ms(k.p(k.bare, 50))} | {_ms(k.p(k.core, 50))} "
                         f"| {_ms(k.p(k.core, 95))} | {k.ratio:.2f}× |")
        lines += ["", _limiter_line(r), ""]
        for k in r.kinds:
            lines += [f"Statements of {k.kind.name}:", ""]
            lines += [f"{number}. `{_short(statement)}`"
                      for number, (statement, _) in enumerate(k.statements, 1)]
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _limiter_line(result: CostResult) -> str:
    get_one = _get_one(result)
    with_limits, without = get_one.p(get_one.app, 50), get_one.p(get_one.unlimited, 50)
    return (f"{result.backend}: the rate limiter on get-one: p50 {_ms(with_limits)} with the "
            f"limits on, {_ms(without)} with them off: {get_one.limiter_ratio:.3f}× "
            f"({_ms(with_limits - without)} a request; no target)")


def summary(results: list[CostResult]) -> list[str]:
    """One line per database: get-one against its target, then the other two requests."""
    lines = []
    for r in results:
        get_one = _get_one(r)
        target = (f"target ≤ {GET_ONE_TARGET * 1000:.0f} ms and ≤ {RATIO_TARGET}×"
                  if r.backend == "postgresql" else "no target on SQLite")
        verdict = ("PASS" if _passes(r) else "FAIL") if r.backend == "postgresql" else "–"
        lines.append(f"{r.backend}: get-one p50 {_ms(get_one.p(get_one.app, 50))} "
                     f"({len(get_one.statements)} statements) against bare "
                     f"{_ms(get_one.p(get_one.bare, 50))} + Core "
                     f"{_ms(get_one.p(get_one.core, 50))} = {get_one.ratio:.2f}× ({target}): "
                     f"{verdict}")
        for k in r.kinds:
            if k is not get_one:
                lines.append(f"{r.backend}: {k.kind.name} p50 {_ms(k.p(k.app, 50))} "
                             f"({len(k.statements)} statements) = {k.ratio:.2f}× of bare + "
                             "Core (no target)")
        lines.append(_limiter_line(r))
    return lines


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.request_cost [--backend postgresql|sqlite|both] [--rounds N]``."""
    arguments = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m bench.request_cost", description=TITLE)
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"),
                        default="postgresql")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--output", type=Path, default=PAGE)
    parser.add_argument("--no-save", action="store_true", help="print only")
    args = parser.parse_args(arguments)
    backends = ("sqlite", "postgresql") if args.backend == "both" else (args.backend,)
    load_before = os.getloadavg()
    results = [run(backend, args.rounds) for backend in backends]
    facts = machine_facts([], shlex.join(arguments), (load_before, os.getloadavg()))
    facts[0] = facts[0].replace("`python -m bench", "`python -m bench.request_cost", 1)
    run_ = Run(TOPIC, TITLE, facts, summary(results), render(results, facts, args.rounds))
    print("\n".join(["", f"labapp benchmark summary: {TITLE}", *run_.verdict]))
    if not args.no_save:
        print(f"written to {publish(args.output, run_)} and {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
