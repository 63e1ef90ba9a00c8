"""Search (issue 10): index build rate, freshness, query latency and the cost of indexing
on bulk create, with SQLite FTS5 and PostgreSQL full text on the same documents as
reference points (``python -m bench --search-only``).

Per backend: a fresh app and database; ``N`` Samples seeded through Core with lab-like text
(names, descriptions, barcodes; one word, "buffer", in every second description); then
1. ``search rebuild`` timed (documents/s), and the same documents loaded into an FTS5 table
   (in-memory SQLite) and, on PostgreSQL, into a table with a GIN-indexed ``tsvector``;
2. p50/p95/max of each query kind through ``GET /api/search/...`` as a reader whose access
   filter applies, and of the same kinds on FTS5 / PostgreSQL (``$top`` 50 everywhere);
3. bulk create, ``POST /api/entity`` of 500 Samples, alternating with indexing on and off.
   On: as ``make run`` serves, an indexer process (``flask --app labapp search worker``)
   drains the queue beside the requests, on the same machine. Off: the worker is paused
   (SIGSTOP) and the inline drain detached; the queue triggers stay in both;
4. freshness, with the worker running: a 500-entity POST, then how long until all 500 are
   searchable.
"""
from __future__ import annotations

import json
import signal
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.orm import Session

from bench.harness import Bench, open_bench
from bench.serving import indexer_worker, wait_until, worker_alive
from bench.write import core_insert, core_rows
from labapp.db import db
from labapp.search import indexer
from labapp.search.rebuild import rebuild_index

TOPIC, TITLE = "search", "Search (issue 10)"
RUNS, WARMUP = 30, 3
TARGET_P95, TARGET_MAX = 0.050, 1.0
WORDS = ("lysate", "plasmid", "culture", "ligation", "primer", "antibody", "serum", "colony",
         "digest", "elution", "pellet", "titre", "aliquot", "glycerol", "agarose", "vector")
STRAINS = ("K-12", "BL21", "DH5α", "β-actin", "pH7.4", "E. coli", "HEK293", "CHO-K1")


def _text(n: int) -> tuple[str, str, str]:
    """(name, description, barcode) of seeded Sample ``n``."""
    a, b = WORDS[n % len(WORDS)], WORDS[(n * 7 + 3) % len(WORDS)]
    strain = STRAINS[(n // 3) % len(STRAINS)]
    name = f"{a.title()} {strain} {n:06d}"
    description = f"{b} prepared from {strain} stock lot L{n % 997:03d}, {a} step {n % 13}"
    if n % 2 == 0:
        description += " in buffer"
    return name, description, f"BC{n:08d}"


def seed(bench: Bench, total: int, log: Callable[[str], None]) -> None:
    for start in range(0, total, 5000):
        entities, samples = core_rows(bench, range(start, min(total, start + 5000)))
        for row in entities:
            n = int(row["id"][4:])
            row["name"], row["description"], row["barcode"] = _text(n)
        core_insert(bench.engine, (entities, samples))
    log(f"  seeded {total:,} samples")


# ---------------------------------------------------------------- query kinds

def kinds(total: int) -> dict[str, Callable[[int], tuple[str, str]]]:
    """Kind → (run number → (API path, the same search as (mode, words))) ."""
    def pick(run: int) -> int:
        return (run * 7919) % total
    return {
        "exact (barcode)": lambda r: (f"exact/BC{pick(r):08d}", ""),
        "like (name part)": lambda r: (f"like/{pick(r):06d}", ""),
        "single word": lambda r: (f"fulltext/L{pick(r) % 997:03d}", f"l{pick(r) % 997:03d}"),
        "two-word AND": lambda r: (f"fulltext/{WORDS[r % 16]} L{pick(r) % 997:03d}",
                                   f"{WORDS[r % 16]} l{pick(r) % 997:03d}"),
        "phrase": lambda r: (f'fulltext/"{WORDS[r % 16]} step {r % 13}"',
                             f'"{WORDS[r % 16]} step {r % 13}"'),
        "2-char prefix": lambda r: (f"fulltext/{WORDS[r % 16][:2]}*", f"{WORDS[r % 16][:2]}*"),
        "3-char prefix": lambda r: (f"fulltext/{WORDS[r % 16][:3]}*", f"{WORDS[r % 16][:3]}*"),
        "common word (half)": lambda r: ("fulltext/buffer", "buffer"),
    }


@dataclass
class Latency:
    times: list[float] = field(default_factory=list)

    def p(self, q: float) -> float:
        ordered = sorted(self.times)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    @property
    def worst(self) -> float:
        return max(self.times)

    def row(self) -> str:
        return (f"{self.p(0.5) * 1000:.1f} / {self.p(0.95) * 1000:.1f} / "
                f"{self.worst * 1000:.1f}")


def api_latency(bench: Bench, kind: Callable[[int], tuple[str, str]], runs: int) -> Latency:
    latency = Latency()
    for run in range(-WARMUP, runs):
        path = kind(run)[0]
        start = time.perf_counter()
        response = bench.client.get(f"/api/search/{path}", headers=bench.reader_headers)
        elapsed = time.perf_counter() - start
        if response.status_code != 200:
            raise RuntimeError(f"{path}: {response.status_code} {response.get_data()[:300]}")
        if run >= 0 or run == -WARMUP:  # the first (cold) run counts towards the maximum
            latency.times.append(elapsed)
    return latency


def _fts_match(words: str) -> str:
    parts = []
    if words.startswith('"'):
        return words
    for word in words.split():
        parts.append(f'"{word[:-1]}"*' if word.endswith("*") else f'"{word}"')
    return " AND ".join(parts)


def fts5(documents: list[tuple[str, str]], kinds_: dict[str, Callable], runs: int,
         ) -> tuple[float, dict[str, Latency]]:
    """FTS5 (unicode61, accents removed, prefix indexes 2 and 3): build rate, latencies."""
    connection = sqlite3.connect(":memory:")
    connection.execute("CREATE VIRTUAL TABLE docs USING fts5(id UNINDEXED, body, "
                       "tokenize='unicode61 remove_diacritics 2', prefix='2 3')")
    start = time.perf_counter()
    connection.executemany("INSERT INTO docs (id, body) VALUES (?, ?)", documents)
    connection.commit()
    rate = len(documents) / (time.perf_counter() - start)
    results = {}
    for name, kind in kinds_.items():
        if not kind(0)[1]:
            continue
        latency = Latency()
        for run in range(-WARMUP, runs):
            query = _fts_match(kind(run)[1])
            begin = time.perf_counter()
            connection.execute("SELECT id FROM docs WHERE docs MATCH ? ORDER BY rank LIMIT 50",
                               (query,)).fetchall()
            connection.execute("SELECT count(*) FROM docs WHERE docs MATCH ?",
                               (query,)).fetchone()
            if run >= 0 or run == -WARMUP:
                latency.times.append(time.perf_counter() - begin)
        results[name] = latency
    connection.close()
    return rate, results


def _tsquery(words: str) -> str:
    if words.startswith('"'):
        return "phraseto_tsquery('simple', :q)"
    return "to_tsquery('simple', :q)"


def _ts_text(words: str) -> str:
    if words.startswith('"'):
        return words.strip('"')
    return " & ".join(f"{w[:-1]}:*" if w.endswith("*") else w for w in words.split())


def postgresql(bench: Bench, documents: list[tuple[str, str]], kinds_: dict[str, Callable],
               runs: int) -> tuple[float, dict[str, Latency]]:
    """PostgreSQL full text ('simple' configuration, GIN index): build rate, latencies."""
    with bench.engine.connect() as connection:
        connection.execute(text("DROP TABLE IF EXISTS bench_docs"))
        connection.execute(text("CREATE TABLE bench_docs (id text primary key, body text, "
                                "tsv tsvector)"))
        start = time.perf_counter()
        connection.execute(text("INSERT INTO bench_docs (id, body, tsv) VALUES "
                                "(:id, :body, to_tsvector('simple', :body))"),
                           [{"id": i, "body": b} for i, b in documents])
        connection.execute(text("CREATE INDEX bench_docs_tsv ON bench_docs USING gin (tsv)"))
        connection.commit()
        rate = len(documents) / (time.perf_counter() - start)
        connection.execute(text("ANALYZE bench_docs"))
        results = {}
        for name, kind in kinds_.items():
            if not kind(0)[1]:
                continue
            latency = Latency()
            for run in range(-WARMUP, runs):
                words = kind(run)[1]
                query = _tsquery(words)
                begin = time.perf_counter()
                connection.execute(text(
                    f"SELECT id FROM bench_docs WHERE tsv @@ {query} "
                    f"ORDER BY ts_rank(tsv, {query}) DESC LIMIT 50"), {"q": _ts_text(words)}).all()
                connection.execute(text(f"SELECT count(*) FROM bench_docs WHERE tsv @@ {query}"),
                                   {"q": _ts_text(words)}).scalar()
                if run >= 0 or run == -WARMUP:
                    latency.times.append(time.perf_counter() - begin)
            results[name] = latency
        connection.execute(text("DROP TABLE bench_docs"))
        connection.commit()
    return rate, results


# ---------------------------------------------------------------- writes and freshness

def _body(bench: Bench, tag: str, count: int) -> bytes:
    return json.dumps({"entities": [
        {"eClass": "Sample", "departmentID": bench.department,
         "name": f"{tag} {n}", "description": f"fresh {WORDS[n % 16]} {tag}"}
        for n in range(count)]}).encode()


def _post(bench: Bench, body: bytes) -> float:
    start = time.perf_counter()
    response = bench.client.post("/api/entity", data=body, content_type="application/json",
                                 headers=bench.admin_headers)
    elapsed = time.perf_counter() - start
    if response.status_code != 201:
        raise RuntimeError(f"POST failed: {response.status_code}")
    return elapsed


_DRAIN_HOOKS = (("after_flush", indexer._after_flush), ("do_orm_execute", indexer._on_execute))


def session_hooks(hooks: tuple[tuple[str, Any], ...], on: bool) -> None:
    """Attach (``on``) or detach the session event listeners ``(event name, listener)``."""
    for name, listener in hooks:
        if on and not event.contains(Session, name, listener):
            event.listen(Session, name, listener)
        elif not on and event.contains(Session, name, listener):
            event.remove(Session, name, listener)


def _indexing(on: bool) -> None:
    """Attach or detach the drain after commit (the queue triggers stay either way)."""
    session_hooks(_DRAIN_HOOKS, on)


def _queue_empty(bench: Bench) -> bool:
    with bench.app.app_context():
        try:
            return indexer.queue_length() == 0
        finally:
            db.session.remove()


def bulk_rates(bench: Bench, batches: int) -> tuple[float, float]:
    """Entities/s of 500-entity POSTs with indexing on (worker running) and off (worker
    paused, inline drain detached), alternating."""
    on, off = [], []
    with indexer_worker(bench, statistics=False) as worker:
        try:
            for batch in range(batches):
                for state, times in ((True, on), (False, off)) if batch % 2 else (
                        (False, off), (True, on)):
                    _indexing(state)
                    worker.send_signal(signal.SIGCONT if state else signal.SIGSTOP)
                    if state:
                        wait_until(lambda: worker_alive(bench), "the worker's heartbeat")
                    label = f"bulk{batch}{'on' if state else 'off'}"
                    times.append(_post(bench, _body(bench, label, 500)))
        finally:
            _indexing(True)
            worker.send_signal(signal.SIGCONT)
        # The worker indexes what is left, outside the measurement.
        wait_until(lambda: _queue_empty(bench), "the queue to drain", timeout=600)
    return 500 * len(on) / sum(on), 500 * len(off) / sum(off)


def freshness(bench: Bench, rounds: int = 3) -> list[float]:
    """Seconds from a 500-entity POST returning until all 500 are searchable."""
    results = []
    for round_ in range(rounds):
        tag = f"fresh{round_}x"
        _post(bench, _body(bench, tag, 500))
        returned = time.perf_counter()
        while True:
            body = bench.client.get(f"/api/search/fulltext/{tag}?$top=1",
                                    headers=bench.admin_headers).get_json()
            if body["total"] >= 500:
                break
            if time.perf_counter() - returned > 30:
                raise RuntimeError("not searchable within 30 s")
        results.append(time.perf_counter() - returned)
    return results


# ---------------------------------------------------------------- one backend

@dataclass
class SearchResult:
    backend: str
    entities: int
    build_rate: float
    build_seconds: float
    reference_rates: dict[str, float]
    api: dict[str, Latency]
    references: dict[str, dict[str, Latency]]
    rate_on: float
    rate_off: float
    fresh: list[float]


def run(backend: str, entities: int, runs: int = RUNS, batches: int = 20,
        log: Callable[[str], None] = print) -> SearchResult:
    log(f"[{backend}] search: fresh database, {entities:,} samples")
    with open_bench(backend) as bench:
        seed(bench, entities, log)
        with bench.app.app_context():
            start = time.perf_counter()
            count = rebuild_index()
            seconds = time.perf_counter() - start
            documents = [(row.id, " ".join(str(v) for v in row[1:] if v)) for row in
                         db.session.execute(text(
                             "SELECT id, name, description, barcode FROM entity"))]
            db.session.remove()
        log(f"  rebuild: {count:,} documents in {seconds:.1f} s ({count / seconds:,.0f}/s)")
        table = kinds(entities)
        api = {name: api_latency(bench, kind, runs) for name, kind in table.items()}
        for name, latency in api.items():
            log(f"  API {name}: p50/p95/max {latency.row()} ms")
        rates, references = {}, {}
        rates["SQLite FTS5"], references["SQLite FTS5"] = fts5(documents, table, runs)
        if backend == "postgresql":
            rates["PostgreSQL full text"], references["PostgreSQL full text"] = postgresql(
                bench, documents, table, runs)
        for name, rate in rates.items():
            log(f"  {name}: build {rate:,.0f}/s")
        rate_on, rate_off = bulk_rates(bench, batches)
        log(f"  bulk create: {rate_on:,.0f}/s indexing on, {rate_off:,.0f}/s off "
            f"({rate_on / rate_off:.0%})")
        with indexer_worker(bench, statistics=False):
            fresh = freshness(bench)
        log(f"  freshness: {', '.join(f'{f * 1000:.0f} ms' for f in fresh)}")
    return SearchResult(backend, entities, count / seconds, seconds, rates, api, references,
                        rate_on, rate_off, fresh)


# ---------------------------------------------------------------- report

def render(results: list[SearchResult], facts: list[str]) -> str:
    lines = [*facts, ""]
    for r in results:
        worst_p95 = max(latency.p(0.95) for latency in r.api.values())
        worst = max(latency.worst for latency in r.api.values())
        latency_ok = worst_p95 < TARGET_P95 and worst < TARGET_MAX
        fresh_ok = max(r.fresh) < 2
        bulk_ok = r.rate_on / r.rate_off >= 0.6
        lines += [
            f"### {r.backend}, {r.entities:,} Samples", "",
            f"- Index build (`search rebuild`): {r.build_rate:,.0f} documents/s "
            f"({r.build_seconds:.1f} s); "
            + "; ".join(f"{name}: {rate:,.0f}/s ({rate / r.build_rate:,.0f}× labapp's rate)"
                        for name, rate in r.reference_rates.items()) + ".",
            f"- Freshness (indexer worker running; 500-entity POST returned → all 500 "
            f"searchable): "
            f"{', '.join(f'{f * 1000:.0f} ms' for f in r.fresh)} — target < 2 s: "
            f"{'met' if fresh_ok else 'MISSED'}.",
            f"- Bulk create (500 per POST, alternating; on: the indexer worker runs beside "
            f"the requests, off: it is paused): {r.rate_on:,.0f}/s indexing on, "
            f"{r.rate_off:,.0f}/s off = {r.rate_on / r.rate_off:.0%} — target ≥ 60%: "
            f"{'met' if bulk_ok else 'MISSED'}.",
            f"- Latency p50 / p95 / max in ms ({RUNS} runs after {WARMUP} warm-ups; the max "
            "includes the first, cold run), `$top` 50, API as a reader whose access filter "
            f"applies — target p95 < 50 ms and no query over 1 s: "
            f"{'met' if latency_ok else 'MISSED'} (worst p95 {worst_p95 * 1000:.1f} ms, "
            f"worst max {worst * 1000:.1f} ms).", "",
            "| kind | API | " + " | ".join(r.references) + " |",
            "|---|---|" + "---|" * len(r.references),
        ]
        for name, latency in r.api.items():
            refs = [r.references[ref][name].row() if name in r.references[ref] else "—"
                    for ref in r.references]
            lines.append(f"| {name} | {latency.row()} | " + " | ".join(refs) + " |")
        lines.append("")
    return "\n".join(lines) + "\n"


def summary(results: list[SearchResult]) -> list[str]:
    """Issue 10's targets, one line per target and database."""
    lines = []
    for r in results:
        worst_p95 = max(latency.p(0.95) for latency in r.api.values())
        worst = max(latency.worst for latency in r.api.values())
        references = "; ".join(f"{name} {rate:,.0f}/s" for name, rate in r.reference_rates.items())
        lines += [
            f"{r.backend}: freshness {max(r.fresh) * 1000:,.0f} ms at worst (target < 2 s): "
            f"{_word(max(r.fresh) < 2)}",
            f"{r.backend}: bulk create {r.rate_on:,.0f}/s indexing on against {r.rate_off:,.0f}/s "
            f"off = {r.rate_on / r.rate_off:.0%} (target ≥ 60%): "
            f"{_word(r.rate_on / r.rate_off >= 0.6)}",
            f"{r.backend}: worst p95 {worst_p95 * 1000:.1f} ms, worst query {worst * 1000:.1f} ms "
            f"(target p95 < 50 ms, none over 1 s): "
            f"{_word(worst_p95 < TARGET_P95 and worst < TARGET_MAX)}",
            f"{r.backend}: index build {r.build_rate:,.0f} documents/s (no target; {references})",
        ]
    return lines


def _word(ok: bool) -> str:
    return "PASS" if ok else "FAIL"
