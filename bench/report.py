"""The summary: machine facts, absolute numbers, ratios, PASS/FAIL, profiles and plans.

A run's report goes whole into a file of its own under ``bench/runs/`` and its verdict onto
``bench/RESULTS.md``, the page of current verdicts (:mod:`bench.results`).
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import platform
import pstats
import sqlite3
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import flask
import sqlalchemy

from bench import query as query_bench
from bench.query import QueryResult
from bench.read import FILTER, ORDERBY, PageResult
from bench.write import WriteResult

TOPIC, TITLE = "bulk-create-and-pages", "Bulk create and list pages"
QUERY_TOPIC, QUERY_TITLE = "dataset-suggest-unique", "Dataset, suggest and unique (issue 5)"
WRITE_TARGET = 0.25  # API bulk-create rate ≥ 25% of the raw Core insert rate
READ_TARGET = 2.0    # API page time ≤ 2× the raw query + serialise time
PROJECT = Path(__file__).resolve().parent.parent


@dataclass
class BackendResult:
    backend: str
    version: str
    entities: int
    write: WriteResult
    pages: list[PageResult]
    plans: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    queries: QueryResult | None = None


def write_pass(result: BackendResult) -> bool:
    return result.write.ratio >= WRITE_TARGET


def read_pass(page: PageResult) -> bool:
    return page.ratio <= READ_TARGET


def _first_line(path: str, prefix: str) -> str | None:
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(prefix):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def speed_reference(rounds: int = 3) -> float:
    """Seconds this machine takes, at best of ``rounds``, for a fixed piece of work like the
    benchmarks' own (rows into an in-memory SQLite table, an index, a scan, JSON): the same
    work on every run, so that figures of runs on different days or machines compare."""
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        connection = sqlite3.connect(":memory:")
        connection.execute("CREATE TABLE sample (id INTEGER PRIMARY KEY, name TEXT, amount REAL)")
        connection.executemany("INSERT INTO sample (name, amount) VALUES (?, ?)",
                               ((f"Sample {n:06d}", n * 0.5) for n in range(50_000)))
        connection.execute("CREATE INDEX ix_sample_name ON sample (name)")
        rows = connection.execute("SELECT id, name, amount FROM sample WHERE name LIKE '%9%' "
                                  "ORDER BY name DESC").fetchall()
        json.dumps([{"id": i, "name": name, "amount": amount} for i, name, amount in rows])
        connection.close()
        best = min(best, time.perf_counter() - started)
    return best


def machine_facts(results: list[BackendResult], command: str,
                  load: tuple[tuple[float, ...], tuple[float, ...]]) -> list[str]:
    memory = _first_line("/proc/meminfo", "MemTotal")
    memory = f"{int(memory.split()[0]) / 1024 / 1024:.0f} GiB" if memory else "unknown"
    cpu = _first_line("/proc/cpuinfo", "model name") or platform.processor() or "unknown"
    facts = [
        f"- Date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; command: `python -m bench"
        f"{' ' + command if command else ''}`",
        f"- CPU: {os.cpu_count()} × {cpu}; RAM: {memory}",
        f"- Load average (1/5/15 min) at start {'/'.join(f'{x:.1f}' for x in load[0])}, "
        f"at end {'/'.join(f'{x:.1f}' for x in load[1])} (other processes share the machine)",
        f"- Python {platform.python_version()}, SQLAlchemy {sqlalchemy.__version__}, "
        f"Flask {flask.__version__}",
        f"- SQLite {sqlite3.sqlite_version} (WAL, synchronous=NORMAL, as the app sets it)",
        f"- Speed reference: {speed_reference() * 1000:,.0f} ms for the fixed work of "
        "`bench.report.speed_reference` (best of 3; lower is faster)",
    ]
    for r in results:
        if r.backend == "postgresql":
            facts.append(f"- {r.version} on 127.0.0.1, server defaults")
    return facts


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f} ms"


def _verdict(ok: bool) -> str:
    return "**PASS**" if ok else "**FAIL**"


def profile_text(profile: cProfile.Profile, limit: int = 25, order: str = "cumulative") -> str:
    """The top ``limit`` functions of ``profile`` by ``order``, with short file names."""
    buffer = io.StringIO()
    pstats.Stats(profile, stream=buffer).sort_stats(order).print_stats(limit)
    text = buffer.getvalue()
    for prefix in sorted({p for p in sys.path if p and len(p) > 1}, key=len, reverse=True):
        text = text.replace(prefix.rstrip("/") + "/", "")
    text = text.replace(str(PROJECT) + "/", "")
    lines = [line.rstrip() for line in text.splitlines()]
    start = next((i for i, line in enumerate(lines) if "function calls" in line), 0)
    return "\n".join(lines[start:]).strip()


def summary_table(results: list[BackendResult]) -> list[str]:
    lines = ["| Backend | Measure | API | Baseline (Core) | Ratio | Target | Result |",
             "|---|---|---:|---:|---:|---|---|"]
    for r in results:
        w = r.write
        lines.append(f"| {r.backend} | bulk create, batches of 500 | {w.api_rate:,.0f} ent/s "
                     f"| {w.core_rate:,.0f} ent/s | {w.ratio:.1%} | ≥ 25% "
                     f"| {_verdict(write_pass(r))} |")
        for page in r.pages:
            lines.append(f"| {r.backend} | page as {page.case.caller}, "
                         f"$skip={page.case.skip:,} | {_ms(page.api)} | {_ms(page.core)} "
                         f"| {page.ratio:.2f}× | ≤ 2× | {_verdict(read_pass(page))} |")
    return lines


def details(r: BackendResult) -> list[str]:
    w = r.write
    lines = [f"### {r.backend}", "", *(f"- **{note}**" for note in r.notes),
             f"- {r.entities:,} Samples seeded: {w.api_entities + 500:,} through the API "
             f"({len(w.api_batches)} timed batches + 1 profiled), {w.core_entities:,} through "
             f"Core. Whole backend run: {r.seconds:.0f} s.",
             f"- API bulk create: {w.api_entities:,} entities in {w.api_seconds:.2f} s = "
             f"**{w.api_rate:,.0f} entities/s** (median batch {_ms(_median(w.api_batches))})",
             f"- Core insert: {w.core_entities:,} entities in {w.core_seconds:.2f} s = "
             f"**{w.core_rate:,.0f} entities/s** (median batch "
             f"{_ms(_median(w.core_batches))})",
             f"- API/Core: **{w.ratio:.1%}** over the run (target ≥ 25%: "
             f"{_verdict(write_pass(r))}); median of the per-round ratios "
             f"{w.round_ratio:.1%}",
             "", *statement_table(w), ""]
    if r.pages:
        lines += ["| Page | total | API median (min–max) | Core median (min–max) | API/Core "
                  "| bytes API / Core |", "|---|---:|---:|---:|---:|---:|"]
        for p in r.pages:
            lines.append(
                f"| {p.case.caller}, $skip={p.case.skip:,} | {p.total:,} | {_ms(p.api)} "
                f"({_ms(min(p.api_runs))}–{_ms(max(p.api_runs))}) | {_ms(p.core)} "
                f"({_ms(min(p.core_runs))}–{_ms(max(p.core_runs))}) | {p.ratio:.2f}× "
                f"| {p.api_bytes:,} / {p.core_bytes:,} |")
    return lines


def statement_table(w: WriteResult, limit: int = 8) -> list[str]:
    """The statements of each write path by total driver time, per batch of 500."""
    if not w.statements:
        return []
    lines = ["Statements of the timed write batches (time in the driver's cursor call: the "
             "server's work plus the driver's), per batch of 500:", "",
             "| Path | Statement | executions / batch | ms / batch | slowest |",
             "|---|---|---:|---:|---:|"]
    batches = {"API": len(w.api_batches), "Core": len(w.core_batches)}
    for path, statements in w.statements.items():
        count = max(batches.get(path, 1), 1)
        ranked = sorted(statements.items(), key=lambda item: -item[1][1])[:limit]
        for statement, (executions, seconds, slowest) in ranked:
            shown = statement.replace("|", "\\|")
            lines.append(f"| {path} | `{shown}` | {executions / count:.1f} "
                         f"| {seconds / count * 1000:.1f} | {_ms(slowest)} |")
    return lines


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else 0.0


def _profile_block(title: str, profile: cProfile.Profile) -> list[str]:
    return [f"#### {title}", "", "Top 25 by cumulative time:", "", "```",
            profile_text(profile), "```", "", "Top 15 by own time:", "", "```",
            profile_text(profile, 15, "tottime"), "```", ""]


def profiles(r: BackendResult, always: bool) -> list[str]:
    lines: list[str] = []
    if (always or not write_pass(r)) and r.write.profile is not None:
        lines += _profile_block(f"{r.backend}: one API batch of 500 (POST /api/entity)",
                                r.write.profile)
    for p in r.pages:
        if (always or not read_pass(p)) and p.profile is not None:
            lines += _profile_block(f"{r.backend}: 3 API pages as {p.case.caller}, "
                                    f"$skip={p.case.skip:,}", p.profile)
    return lines


def plans(r: BackendResult) -> list[str]:
    lines: list[str] = []
    for title, statements in r.plans.items():
        lines += [f"#### {r.backend}: {title}", ""]
        for statement, plan in statements:
            lines += ["```sql", statement, "```", "```", plan, "```", ""]
    return lines


def render(results: list[BackendResult], facts: list[str], all_profiles: bool,
           args: argparse.Namespace) -> str:
    """The whole report of the bulk-create and page part, after the machine ``facts``."""
    out = [*facts, "",
           f"Page request: `GET /api/entity/Sample?$filter={FILTER}&$orderby={ORDERBY}"
           f"&$top=500&$skip=…`; median of {args.runs} runs after {args.warmup} warm-up runs, "
           "API and baseline interleaved. Page baseline: the same SELECT and count(*) in "
           "SQLAlchemy Core (same columns, WHERE with the visibility predicate, ORDER BY, "
           "LIMIT/OFFSET) + `json.dumps`. Write baseline: `connection.execute(insert(table), "
           "rows)` for `entity` and `sample`, a commit per batch of 500, alternating with the "
           "API batches.", "", *summary_table(results), ""]
    for r in results:
        out += [*details(r), ""]
    profile_lines = [line for r in results for line in profiles(r, all_profiles)]
    if profile_lines:
        out += ["### Profiles of the API path", "", *profile_lines]
    plan_lines = [line for r in results for line in plans(r)]
    if plan_lines:
        out += ["### Query plans of the API page request", "",
                "<details><summary>EXPLAIN (ANALYZE, BUFFERS) on PostgreSQL, EXPLAIN QUERY "
                "PLAN on SQLite</summary>", "", *plan_lines, "</details>", ""]
    return "\n".join(out).rstrip() + "\n"


def verdict(results: list[BackendResult]) -> list[str]:
    """The bulk-create and page targets, one line per target and database: figure, Core's
    figure, ratio, target, PASS or FAIL."""
    lines = []
    for r in results:
        w = r.write
        if not w.api_batches:
            lines.append(f"{r.backend}: seeded through Core only (no bulk create measured)")
        else:
            lines.append(f"{r.backend}: bulk create {w.api_rate:,.0f} entities/s against Core "
                         f"{w.core_rate:,.0f}/s = {w.ratio:.1%} (target ≥ 25%; per-round "
                         f"median {w.round_ratio:.1%}): {'PASS' if write_pass(r) else 'FAIL'}")
        for p in r.pages:
            lines.append(f"{r.backend}: page as {p.case.caller}, $skip={p.case.skip:,}: "
                         f"{_ms(p.api)} against Core {_ms(p.core)} = {p.ratio:.2f}× (target "
                         f"≤ 2×): {'PASS' if read_pass(p) else 'FAIL'}")
        lines += [f"{r.backend}: {note}" for note in r.notes]
    return lines


def query_verdict(results: list[BackendResult]) -> list[str]:
    """Issue 5's targets (dataset ratio, lookup p95), one line per target and database."""
    lines = []
    for r in results:
        if r.queries is None:
            continue
        for d in r.queries.datasets:
            lines.append(f"{r.backend}: dataset as {d.caller} ({d.counts['samples']:,} samples): "
                         f"{_ms(d.api)} against Core {_ms(d.core)} = {d.ratio:.2f}× (target "
                         f"≤ 3×): {'PASS' if d.ok else 'FAIL'}")
        for x in r.queries.lookups:
            lines.append(f"{r.backend}: `{x.name}` p50 {_ms(x.percentile(50))}, p95 "
                         f"{_ms(x.percentile(95))} (target p95 < 50 ms): "
                         f"{'PASS' if x.ok else 'FAIL'}")
    return lines


def stdout_summary(results: list[BackendResult]) -> str:
    return "\n".join(["", "labapp benchmark summary", *verdict(results),
                      *query_verdict(results)])


def render_queries(results: list[BackendResult], facts: list[str], all_profiles: bool) -> str:
    """The whole report of issue 5's part: dataset ratios and lookup percentiles."""
    q0 = next(r.queries for r in results if r.queries)
    per_project = (f"{query_bench.EXPERIMENTS} experiments → "
                   f"{query_bench.EXPERIMENTS * query_bench.STEPS} steps → "
                   f"{query_bench.EXPERIMENTS * query_bench.STEPS * query_bench.PER_STEP} "
                   "samples")
    out = [*facts, "",
           f"Dataset: `POST /api/query/dataset` of exps (Experiment, projectID = P) → steps "
           f"(experimentID in exps.id) → samples (stepID in steps.id); per project {per_project} "
           f"for the reader (+{query_bench.HIDDEN} experiments of another department for "
           f"admin), {query_bench.PROJECTS} projects rotated; median of "
           f"{len(q0.datasets[0].api_runs)} "
           f"runs after {query_bench.WARMUP} warm-ups, API and baseline interleaved. Baseline: "
           "the same three SELECTs in SQLAlchemy Core, each level joined to the previous one "
           "with `IN (SELECT …)` and the visibility predicate on every level, every column, "
           "ordered by id, + `json.dumps`. Lookups: the reader, "
           f"{query_bench.LOOKUP_REQUESTS} requests per endpoint after 10 warm-ups, a mix of "
           "kinds round-robin (table below); nearest-rank percentiles of the whole request "
           "through the Flask test client.", "",
           "| Backend | Measure | API | Baseline / p95 | Ratio / p50 | Target | Result |",
           "|---|---|---:|---:|---:|---|---|"]
    for r in results:
        q = r.queries
        if q is None:
            continue
        for d in q.datasets:
            out.append(f"| {r.backend} | dataset as {d.caller} ({d.counts['exps']} → "
                       f"{d.counts['steps']} → {d.counts['samples']:,}) | {_ms(d.api)} "
                       f"| {_ms(d.core)} | {d.ratio:.2f}× | ≤ 3× | {_verdict(d.ok)} |")
        for x in q.lookups:
            out.append(f"| {r.backend} | `{x.name}` | – | p95 {_ms(x.percentile(95))} "
                       f"| p50 {_ms(x.percentile(50))} | p95 < 50 ms | {_verdict(x.ok)} |")
    out.append("")
    for r in results:
        q = r.queries
        if q is None:
            continue
        out += [f"### {r.backend} (issue 5)", "", *(f"- **{note}**" for note in r.notes),
                f"- {q.entities:,} entities in the database; query data seeded in "
                f"{q.seed_seconds:.1f} s; this part took {q.seconds:.0f} s.", "",
                "| Dataset | API median (min–max) | Core median (min–max) | API/Core "
                "| bytes API / Core |", "|---|---:|---:|---:|---:|"]
        for d in q.datasets:
            out.append(f"| {d.caller} | {_ms(d.api)} ({_ms(min(d.api_runs))}–"
                       f"{_ms(max(d.api_runs))}) | {_ms(d.core)} ({_ms(min(d.core_runs))}–"
                       f"{_ms(max(d.core_runs))}) | {d.ratio:.2f}× "
                       f"| {d.api_bytes:,} / {d.core_bytes:,} |")
        out += ["", "| Lookup | kind of query | n | p50 | p95 | max |",
                "|---|---|---:|---:|---:|---:|"]
        for x in q.lookups:
            for kind, times in x.by_kind.items():
                out.append(f"| `{x.name}` | {kind} | {len(times)} "
                           f"| {_ms(query_bench.percentile(times, 50))} "
                           f"| {_ms(query_bench.percentile(times, 95))} | {_ms(max(times))} |")
            out.append(f"| `{x.name}` | **all** | {len(x.times)} | "
                       f"**{_ms(x.percentile(50))}** | **{_ms(x.percentile(95))}** "
                       f"| {_ms(max(x.times))} |")
        out.append("")
    extra: list[str] = []
    for r in results:
        q = r.queries
        if q is None:
            continue
        for d in q.datasets:
            if (all_profiles or not d.ok) and d.profile is not None:
                extra += _profile_block(f"{r.backend}: 3 dataset requests as {d.caller}",
                                        d.profile)
        for x in q.lookups:
            if all_profiles or not x.ok:
                if x.profile is not None:
                    extra += _profile_block(f"{r.backend}: {x.name}, its slowest kind",
                                            x.profile)
    if extra:
        out += ["### Profiles (issue 5)", "", *extra]
    plan_lines: list[str] = []
    for r in results:
        q = r.queries
        if q is None:
            continue
        plan_lines += [f"#### {r.backend}: dataset as reader", ""]
        for statement, plan in q.dataset_plans:
            plan_lines += ["```sql", statement, "```", "```", plan, "```", ""]
        for x in q.lookups:
            plan_lines += [f"#### {r.backend}: `{x.name}`, its slowest kind of query", ""]
            for statement, plan in x.plans:
                plan_lines += ["```sql", statement, "```", "```", plan, "```", ""]
    out += ["### Query plans (issue 5)", "",
            "<details><summary>EXPLAIN (ANALYZE, BUFFERS) on PostgreSQL, EXPLAIN QUERY PLAN "
            "on SQLite</summary>", "", *plan_lines, "</details>", ""]
    return "\n".join(out).rstrip() + "\n"
