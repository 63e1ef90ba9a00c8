"""``python -m bench [--entities 100000] [--backend sqlite|postgresql|both] [--quick]``.

For each backend: a fresh app and database (``flask init``), then
1. bulk create: ``POST /api/entity`` in batches of 500 against Core inserts of the same rows,
   alternating, half the entities each (together they seed the database);
2. a filtered, ordered 500-entity page at ``$skip`` 0 and 90% of the entities, as a reader
   whose visibility predicate applies and as admin, against the same query in Core +
   ``json.dumps``;
3. EXPLAIN of the statements the API page request sends;
4. (issue 5, ``bench/query.py``) on the same database: a 3-query ``POST /api/query/dataset``
   against the same joins in Core, and p50/p95 of suggest and unique as a reader;
5. (issue 9, ``bench/auth.py``) on a database of its own, served by gunicorn: Basic password
   against PAT latency, 16 Basic clients against 8 Bearer clients, ``/healthz``
   (``--auth-only`` runs just this part).
The summary goes to stdout and into the generated blocks of ``bench/RESULTS.md``.
"""
from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from pathlib import Path

from sqlalchemy import func, select, text

from bench import auth, query, read, write
from bench.harness import BATCH, matching, open_bench
from bench.report import (
    QUERY_BEGIN,
    QUERY_END,
    BackendResult,
    machine_facts,
    render,
    render_queries,
    save,
    stdout_summary,
)
from labapp.db import db
from labapp.model import Sample

DEFAULT_OUTPUT = Path(__file__).resolve().parent / "RESULTS.md"


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="The entity API against raw SQLAlchemy Core, on SQLite and PostgreSQL; "
                    "results go to bench/RESULTS.md (see its first part).")
    parser.add_argument("--entities", type=int, default=100_000,
                        help="Samples to seed (a multiple of 1000; default 100000)")
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--quick", action="store_true",
                        help="smoke check: 10000 entities, 3 runs and 2 warm-ups per page")
    parser.add_argument("--runs", type=int, default=read.RUNS,
                        help=f"measured runs per page (default {read.RUNS})")
    parser.add_argument("--warmup", type=int, default=read.WARMUP,
                        help=f"warm-up runs per page and path (default {read.WARMUP})")
    parser.add_argument("--writes-only", action="store_true",
                        help="measure bulk create only (no pages, no plans)")
    parser.add_argument("--queries-only", action="store_true",
                        help="issue 5 part only: seed the Samples through Core (no API "
                             "writes, no pages) and measure the dataset and the lookups")
    parser.add_argument("--no-queries", action="store_true",
                        help="skip the issue 5 part (dataset, suggest, unique)")
    parser.add_argument("--auth-only", action="store_true",
                        help="issue 9 part only: the cost of Basic on a gunicorn server")
    parser.add_argument("--no-auth", action="store_true", help="skip the issue 9 part")
    parser.add_argument("--auth-seconds", type=float, default=auth.SECONDS,
                        help=f"length of each load run of the issue 9 part (default "
                             f"{auth.SECONDS:.0f})")
    parser.add_argument("--profile", action="store_true",
                        help="show every profile, not only those of failing targets")
    parser.add_argument("--drop-name-statistics", action="store_true",
                        help="BEFORE: drop the PostgreSQL statistics on lower(name) that "
                             "migration 5fee591b2bdf adds (the schema before it)")
    parser.add_argument("--sqlite-analyze", action="store_true",
                        help="EXPERIMENT: run ANALYZE on SQLite after seeding (a proposed "
                             "maintenance step)")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT,
                        help="results file (its generated block is replaced)")
    parser.add_argument("--no-save", action="store_true", help="print only")
    parser.add_argument("--query-runs", type=int, default=query.RUNS,
                        help=f"measured dataset runs per caller (default {query.RUNS})")
    args = parser.parse_args(argv)
    if args.quick:
        args.entities = 10_000
        args.runs = min(args.runs, 3)
        args.warmup = min(args.warmup, 2)
    if args.entities < 4 * BATCH or args.entities % (2 * BATCH):
        parser.error(f"--entities must be a multiple of {2 * BATCH} and at least {4 * BATCH}")
    return args


def _server_version(backend: str) -> str:
    if backend == "sqlite":
        import sqlite3
        return f"SQLite {sqlite3.sqlite_version}"
    return db.session.scalar(text("SELECT version()")).split(" on ")[0]


def _analyze(backend: str) -> None:
    with db.engine.connect() as connection:
        if backend == "postgresql":
            connection = connection.execution_options(isolation_level="AUTOCOMMIT")
        connection.exec_driver_sql("ANALYZE")
        if backend == "sqlite":
            connection.commit()


def run_backend(backend: str, args: argparse.Namespace, log=print) -> BackendResult:
    started = time.perf_counter()
    entities = args.entities
    far = entities * 9 // 10
    if matching(entities) < far + BATCH:
        raise SystemExit(f"{entities} entities are too few for $skip={far}")
    notes = []
    if args.drop_name_statistics and backend == "postgresql":
        notes.append("BEFORE --drop-name-statistics: no statistics on lower(name)")
    if args.sqlite_analyze and backend == "sqlite":
        notes.append("EXPERIMENT --sqlite-analyze: ANALYZE ran after seeding")
    log(f"[{backend}] fresh database, flask init, writing {entities:,} samples ...")
    with open_bench(backend) as bench:
        if args.drop_name_statistics and backend == "postgresql":
            with bench.app.app_context(), db.engine.begin() as connection:
                connection.exec_driver_sql("DROP STATISTICS IF EXISTS st_entity_name_lower")
        if args.queries_only:
            written = write.core_seed(bench, entities, log=log)
        else:
            written = write.run(bench, entities, log=log)
        with bench.app.app_context():
            version = _server_version(backend)
            count = db.session.scalar(select(func.count()).select_from(Sample))
            if count != entities:
                raise RuntimeError(f"expected {entities} samples, found {count}")
            # PostgreSQL: what autovacuum does shortly after a bulk load, done now so that
            # runs are repeatable. SQLite gathers no statistics unless asked.
            if backend == "postgresql" or args.sqlite_analyze:
                _analyze(backend)
            db.session.remove()
        pages, plans = [], {}
        if not (args.writes_only or args.queries_only):
            for caller in ("reader", "admin"):
                for skip in (0, far):
                    case = read.PageCase(caller, skip)
                    result = read.measure(bench, case, args.runs, args.warmup)
                    pages.append(result)
                    log(f"  [{backend}] page {caller} skip={skip}: API "
                        f"{result.api * 1000:.1f} ms, Core {result.core * 1000:.1f} ms, "
                        f"{result.ratio:.2f}x")
            for case in (read.PageCase("reader", 0), read.PageCase("reader", far),
                         read.PageCase("admin", 0)):
                plans[f"page as {case.caller}, $skip={case.skip:,}"] = read.explain(bench, case)
        queries = None
        if not (args.writes_only or args.no_queries):
            queries = query.run(bench, entities, runs=args.query_runs, log=log)
    return BackendResult(backend, version, entities, written, pages, plans,
                         time.perf_counter() - started, notes, queries)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = _arguments(argv)
    backends = ("sqlite", "postgresql") if args.backend == "both" else (args.backend,)
    if args.auth_only:
        return _auth_part(backends, args, os.getloadavg())
    load_before = os.getloadavg()
    results = [run_backend(backend, args) for backend in backends]
    load = (load_before, os.getloadavg())
    print(stdout_summary(results))
    if not args.no_auth:
        _auth_part(backends, args, os.getloadavg())
    if not args.no_save:
        command = shlex.join(argv)
        if not args.queries_only:
            save(args.output, render(results, command, args.profile, load, args))
        if any(r.queries for r in results):
            save(args.output, render_queries(results, command, args.profile, load),
                 QUERY_BEGIN, QUERY_END)
        print(f"\nwritten to {args.output}")
    return 0


def _auth_part(backends: tuple[str, ...], args: argparse.Namespace,
               load_before: tuple[float, ...]) -> int:
    results = [auth.run(backend, args.auth_seconds) for backend in backends]
    load = (load_before, os.getloadavg())
    print("\n".join(["", "labapp benchmark summary (issue 9)", *auth.summary(results)]))
    if not args.no_save:
        facts = machine_facts([], shlex.join(sys.argv[1:]), load)
        save(args.output, auth.render(results, facts), auth.AUTH_BEGIN, auth.AUTH_END)
        print(f"\nwritten to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
