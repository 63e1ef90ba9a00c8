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
   (``--auth-only`` runs just this part);
6. (issue 10, ``bench/search.py``) on a database of its own: index build rate, freshness,
   query latency against FTS5 and PostgreSQL full text, bulk create with indexing on and off
   (``--search-only`` runs just this part); with ``--search-backends whoosh,postgresql``
   (issue 34 §4, ``bench/search_backends.py``) both search backends side by side on
   PostgreSQL instead.
7. (issue 11, ``bench/storage.py``, only with ``--storage-only``) on a database of its own:
   check-in of 500 items and the box page of a 10 × 10 box with 100,000 stored samples.
8. (issue 12, ``bench/dashboards.py``, only with ``--dashboards-only``) on a database of its
   own: a dashboard of 8 widgets, each widget's data and the whole page against the same
   aggregates in Core.
9. (issue 13, ``bench/odata.py``) on a database of its own, served by gunicorn: an OData export
   of every row through ``@odata.nextLink`` against Core + JSON, page times and the worker's
   memory (``--odata-only`` runs just this part).
10. (issue 14, ``bench/sync.py``, only with ``--sync-only``) on databases of their own:
   export and restore of the entities against a plain Core select + JSON write.
11. (issue 20, ``bench/readlock.py``, only with ``--readlock-only``) on a database of its
   own, served by gunicorn: 30 browsers polling the bell and widgets while 4 clients write,
   with every unit taking the write lock (before) and with read units (after), alternating.
12. (issue 21 §3, ``bench/export.py``, only with ``--export-only``) on a database of its own:
   a list exported as CSV and XLSX through the API against a plain Core select + csv writer,
   rows/s and peak memory.
13. (issue 22, ``bench/imports.py``, only with ``--imports-only``) on a database of its own:
   a spreadsheet of Samples (CSV and XLSX) imported, dry run and commit, against the bulk
   create of the same rows; rows/s and peak memory.
14. (issue 24, ``bench/million.py``, only with ``--million``) on a database of its own: a
   million samples with storage, experiments and 50 departments, every capability measured
   as a reader with row-level security against its Core baseline, and a soak of the server.
The summary goes to stdout; each part's whole report goes into a dated file of its own under
``bench/runs/`` and its verdict onto ``bench/RESULTS.md`` (:mod:`bench.results`).
"""
from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from pathlib import Path

from sqlalchemy import func, select, text

from bench import (
    auth,
    dashboards,
    export,
    imports,
    million,
    million_report,
    odata,
    query,
    read,
    readlock,
    report,
    search,
    search_backends,
    storage,
    sync,
    write,
)
from bench.harness import BATCH, matching, open_bench
from bench.report import BackendResult, machine_facts, render, render_queries, stdout_summary
from bench.results import PAGE, Run, publish
from labapp.db import db
from labapp.model import Sample


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="The entity API against raw SQLAlchemy Core, on SQLite and PostgreSQL; "
                    "each run goes to bench/runs/, its verdict to bench/RESULTS.md.")
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
    parser.add_argument("--search-only", action="store_true",
                        help="issue 10 part only: search index build, freshness, latency")
    parser.add_argument("--no-search", action="store_true", help="skip the issue 10 part")
    parser.add_argument("--search-backends", metavar="LIST",
                        help="issue 34 §4 part only: the comma-separated search backends "
                             "(whoosh,postgresql) side by side on PostgreSQL, each on a "
                             "database of its own (--entities 1000000 for 10^6)")
    parser.add_argument("--bulk-only", action="store_true",
                        help="with --search-backends: seeding, rebuild and the bulk create "
                             "with indexing on and off only")
    parser.add_argument("--bulk-rounds", type=int, default=1,
                        help="with --search-backends: rounds of the bulk create, the "
                             "backends taking turns (default 1)")
    parser.add_argument("--bulk-batches", type=int, default=12,
                        help="with --search-backends: 500-entity batches per state and "
                             "round of the bulk create (default 12)")
    parser.add_argument("--storage-only", action="store_true",
                        help="issue 11 part only: check-in of 500 and the box page with "
                             "100,000 stored samples (--quick: 10,000)")
    parser.add_argument("--dashboards-only", action="store_true",
                        help="issue 12 part only: a dashboard of 8 widgets against the same "
                             "aggregates in Core")
    parser.add_argument("--odata-only", action="store_true",
                        help="issue 13 part only: an OData export through next links")
    parser.add_argument("--no-odata", action="store_true", help="skip the issue 13 part")
    parser.add_argument("--sync-only", action="store_true",
                        help="issue 14 part only: export and restore against a plain Core "
                             "select + JSON write")
    parser.add_argument("--readlock-only", action="store_true",
                        help="issue 20 part only: browsers polling the bell and widgets "
                             "while clients write, before and after read units")
    parser.add_argument("--export-only", action="store_true",
                        help="issue 21 §3 part only: a list exported as CSV and XLSX against "
                             "a plain Core select + csv writer")
    parser.add_argument("--imports-only", action="store_true",
                        help="issue 22 part only: a spreadsheet imported (dry run, commit) "
                             "against the bulk create of the same rows")
    parser.add_argument("--million", action="store_true",
                        help="issue 24 part only: 1,000,000 samples (or --entities), every "
                             "capability measured at that size, then a soak")
    parser.add_argument("--soak-minutes", type=float, default=10.0,
                        help="length of the --million soak per backend (default 10; the "
                             "issue's hour is --soak-minutes 60)")
    parser.add_argument("--soak-only", action="store_true",
                        help="with --million: seed, rebuild and drain, then only the soak "
                             "(no request measures)")
    parser.add_argument("--readlock-seconds", type=float, default=readlock.SECONDS,
                        help=f"length of each phase of the issue 20 part (default "
                             f"{readlock.SECONDS:.0f})")
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
    parser.add_argument("--output", type=Path, default=PAGE,
                        help="the page of verdicts to update (default bench/RESULTS.md); each "
                             "run's report goes to runs/ beside it")
    parser.add_argument("--no-save", action="store_true", help="print only")
    parser.add_argument("--query-runs", type=int, default=query.RUNS,
                        help=f"measured dataset runs per caller (default {query.RUNS})")
    args = parser.parse_args(argv)
    if args.million and "--entities" not in " ".join(argv):
        args.entities = 1_000_000
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
    if args.search_only:
        return _search_part(backends, args, os.getloadavg())
    if args.search_backends:
        return _search_backends_part(args, os.getloadavg())
    if args.storage_only:
        return _storage_part(backends, args, os.getloadavg())
    if args.dashboards_only:
        return dashboards.main_part(backends, args.entities,
                                    5 if args.quick else dashboards.RUNS,
                                    None if args.no_save else args.output, shlex.join(argv))
    if args.odata_only:
        return _odata_part(backends, args, os.getloadavg())
    if args.readlock_only:
        return readlock.main_part(backends, args.readlock_seconds,
                                  None if args.no_save else args.output, shlex.join(argv))
    if args.export_only:
        return export.main_part(backends, args.entities, 1 if args.quick else export.RUNS,
                                None if args.no_save else args.output, shlex.join(argv))
    if args.imports_only:
        return imports.main_part(backends, args.entities, 1 if args.quick else 2,
                                 None if args.no_save else args.output, shlex.join(argv))
    if args.million:
        return _million_part(backends, args, os.getloadavg())
    if args.sync_only:
        return sync.main_part(backends, args.entities, None if args.no_save else args.output,
                              shlex.join(argv))
    load_before = os.getloadavg()
    results = [run_backend(backend, args) for backend in backends]
    load = (load_before, os.getloadavg())
    print(stdout_summary(results))
    if not args.no_auth:
        _auth_part(backends, args, os.getloadavg())
    if not args.no_search:
        _search_part(backends, args, os.getloadavg())
    if not args.no_odata:
        _odata_part(backends, args, os.getloadavg())
    if not args.no_save:
        command = shlex.join(argv)
        facts = machine_facts(results, command, load)
        if not args.queries_only:
            _published(args.output, Run(report.TOPIC, report.TITLE, facts,
                                        report.verdict(results),
                                        render(results, facts, args.profile, args)))
        if any(r.queries for r in results):
            _published(args.output, Run(report.QUERY_TOPIC, report.QUERY_TITLE, facts,
                                        report.query_verdict(results),
                                        render_queries(results, facts, args.profile)))
    return 0


def _published(page: Path, run: Run) -> None:
    print(f"written to {publish(page, run)} and {page}")


def _facts(load_before: tuple[float, ...]) -> list[str]:
    """The machine facts of a part that ran from ``load_before`` until now."""
    return machine_facts([], shlex.join(sys.argv[1:]), (load_before, os.getloadavg()))


def _report(run: Run, args: argparse.Namespace) -> int:
    """Print a part's verdict and, unless ``--no-save``, publish the run."""
    print("\n".join(["", f"labapp benchmark summary: {run.title}", *run.verdict]))
    if not args.no_save:
        _published(args.output, run)
    return 0


def _auth_part(backends: tuple[str, ...], args: argparse.Namespace,
               load_before: tuple[float, ...]) -> int:
    results = [auth.run(backend, args.auth_seconds) for backend in backends]
    facts = _facts(load_before)
    return _report(Run(auth.TOPIC, auth.TITLE, facts, auth.summary(results),
                       auth.render(results, facts)), args)


def _search_part(backends: tuple[str, ...], args: argparse.Namespace,
                 load_before: tuple[float, ...]) -> int:
    runs = 10 if args.quick else search.RUNS
    results = [search.run(backend, args.entities, runs=runs, batches=4 if args.quick else 20)
               for backend in backends]
    facts = _facts(load_before)
    return _report(Run(search.TOPIC, search.TITLE, facts, search.summary(results),
                       search.render(results, facts)), args)


def _search_backends_part(args: argparse.Namespace, load_before: tuple[float, ...]) -> int:
    names = [name.strip() for name in args.search_backends.split(",") if name.strip()]
    unknown = [name for name in names if name not in search_backends.BACKENDS]
    if unknown or not names:
        raise SystemExit(f"--search-backends: expected some of "
                         f"{','.join(search_backends.BACKENDS)}, not {args.search_backends}")
    results = search_backends.run_all(names, args.entities,
                                      runs=10 if args.quick else search.RUNS,
                                      batches=3 if args.quick else args.bulk_batches,
                                      bulk_rounds=args.bulk_rounds, bulk_only=args.bulk_only)
    facts = _facts(load_before)
    if args.bulk_only:
        return _report(Run(search_backends.BULK_TOPIC, search_backends.BULK_TITLE, facts,
                           search_backends.summary(results),
                           search_backends.render(results, facts)), args)
    return _report(Run(search_backends.TOPIC, search_backends.TITLE, facts,
                       search_backends.summary(results),
                       search_backends.render(results, facts)), args)


def _storage_part(backends: tuple[str, ...], args: argparse.Namespace,
                  load_before: tuple[float, ...]) -> int:
    boxes = args.entities // 100
    results = [storage.run(backend, boxes=boxes, rounds=3 if args.quick else 5,
                           page_runs=20 if args.quick else 50) for backend in backends]
    facts = _facts(load_before)
    return _report(Run(storage.TOPIC, storage.TITLE, facts, storage.summary(results),
                       storage.render(results, facts)), args)


def _odata_part(backends: tuple[str, ...], args: argparse.Namespace,
                load_before: tuple[float, ...]) -> int:
    runs = 1 if args.quick else odata.RUNS
    results = [odata.run(backend, args.entities, runs) for backend in backends]
    facts = _facts(load_before)
    return _report(Run(odata.TOPIC, odata.TITLE, facts, odata.summary(results),
                       odata.render(results, facts)), args)


def _million_part(backends: tuple[str, ...], args: argparse.Namespace,
                  load_before: tuple[float, ...]) -> int:
    results = [million.run(backend, args.entities, soak_minutes=args.soak_minutes,
                           measures=not args.soak_only)
               for backend in backends]
    facts = _facts(load_before)
    return _report(Run(million_report.TOPIC, million_report.TITLE, facts,
                       million_report.summary(results),
                       million_report.render(results, facts)), args)


if __name__ == "__main__":
    sys.exit(main())
