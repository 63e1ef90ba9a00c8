"""The change log and feed (issue 36): what the log costs bulk create, and how fast a client
following the feed reads it.

- **Log cost**: 500-entity ``POST /api/entity`` batches with the change log's triggers on and
  off, alternating batch by batch in one run (PostgreSQL: the triggers disabled; SQLite:
  dropped and made again from their own text). Target: with the log ≥ 90% of the rate
  without (a cost ≤ 10%).
- **Feed throughput**: a client follows ``GET /api/changes`` from the start of a log of
  ``--changes`` changes, 500 per page, as the department's reader (every change visible
  through a grant) with and without ``$expand=entity``: changes/s.

Batches of 500 take a fifth of a second: one disturbed by other work on the machine moves the
run's ratio by points, so the run has 30 rounds and also reports the median of the rounds.

``python -m bench.change_feed [--backend sqlite|postgresql|both] [--batches N]
[--changes N] [--no-save]``.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass, field

from sqlalchemy import text

from bench.harness import Bench, open_bench
from bench.report import machine_facts
from bench.results import PAGE, Run, publish
from bench.search import _body, _post

TOPIC = "change-feed"
TITLE = "Change log and feed (issue 36)"
TARGET = 0.90  # bulk create with the log, as a share of without
BATCH = 500
PG_TRIGGERS = (("entity", "change_log_entity_insert"), ("entity", "change_log_entity_update"),
               ("entity", "change_log_entity_delete"), ("storage_log", "change_log_storage_log"))


@dataclass
class FeedRun:
    backend: str
    with_log: list[float] = field(default_factory=list)  # seconds per batch
    without_log: list[float] = field(default_factory=list)
    followed: dict[str, tuple[int, float]] = field(default_factory=dict)  # changes, seconds

    def rates(self) -> tuple[float, float]:
        return (BATCH * len(self.with_log) / sum(self.with_log),
                BATCH * len(self.without_log) / sum(self.without_log))


class LogSwitch:
    """Turns the change log's triggers off and on again."""

    def __init__(self, bench: Bench) -> None:
        self.bench = bench
        with bench.engine.connect() as connection:
            self.sqlite_triggers = [] if bench.backend == "postgresql" else list(
                connection.execute(text("SELECT name, sql FROM sqlite_master WHERE "
                                        "type = 'trigger' AND name LIKE 'change_log_%'")))

    def set(self, on: bool) -> None:
        with self.bench.engine.begin() as connection:
            if self.bench.backend == "postgresql":
                for table, trigger in PG_TRIGGERS:
                    connection.execute(text(f"ALTER TABLE {table} "
                                            f"{'ENABLE' if on else 'DISABLE'} TRIGGER {trigger}"))
                return
            for name, sql in self.sqlite_triggers:
                connection.execute(text(f"DROP TRIGGER IF EXISTS {name}"))
                if on:
                    connection.execute(text(sql))


def log_cost(bench: Bench, run: FeedRun, batches: int) -> None:
    """Alternate batches with and without the log (the order flips each round)."""
    switch = LogSwitch(bench)
    try:
        for batch in range(batches):
            order = (True, False) if batch % 2 else (False, True)
            for on in order:
                switch.set(on)
                took = _post(bench, _body(bench, f"cost{batch}{int(on)}", BATCH))
                (run.with_log if on else run.without_log).append(took)
    finally:
        switch.set(True)


def follow(bench: Bench, expand: bool) -> tuple[int, float]:
    """Read the whole feed from the start as the reader; (changes read, seconds)."""
    cursor, read = "0", 0
    query = {"$top": "500", **({"$expand": "entity"} if expand else {})}
    started = time.perf_counter()
    while True:
        response = bench.client.get("/api/changes", headers=bench.reader_headers,
                                    query_string={"after": cursor, **query})
        if response.status_code != 200:
            raise RuntimeError(f"feed answered {response.status_code}: {response.get_json()}")
        page = response.get_json()
        if not page["data"]:
            return read, time.perf_counter() - started
        read += len(page["data"])
        cursor = page["next"]


def run_backend(backend: str, batches: int, changes: int) -> FeedRun:
    run = FeedRun(backend)
    with open_bench(backend, {"SEARCH_DRAIN": "before-search"}) as bench:
        log_cost(bench, run, batches)
        made = batches * BATCH  # the batches with the log
        while made < changes:
            _post(bench, _body(bench, f"feed{made}", BATCH))
            made += BATCH
        if backend == "postgresql":
            with bench.engine.connect().execution_options(
                    isolation_level="AUTOCOMMIT") as connection:
                connection.execute(text("VACUUM ANALYZE change_log"))
        for expand in (False, True):
            run.followed["expanded" if expand else "plain"] = follow(bench, expand)
    return run


def verdict(runs: list[FeedRun]) -> list[str]:
    lines = []
    for run in runs:
        with_log, without = run.rates()
        share = with_log / without
        rounds = statistics.median(off / on for on, off in zip(run.with_log, run.without_log,
                                                                strict=True))
        lines.append(f"{run.backend}: bulk create with the change log {with_log:,.0f} "
                     f"entities/s, without {without:,.0f}: {share:.0%} over the run, "
                     f"{rounds:.0%} as the median of adjacent batches (target ≥ "
                     f"{TARGET:.0%} over the run): "
                     f"{'**PASS**' if share >= TARGET else '**FAIL**'}")
        for name, (read, seconds) in run.followed.items():
            lines.append(f"{run.backend}: following the feed ({name}) {read / seconds:,.0f} "
                         f"changes/s ({read:,} changes in {seconds:.1f} s)")
    return lines


def details(runs: list[FeedRun]) -> list[str]:
    lines = ["| database | batch | with the log (s) | without (s) |", "|---|---|---|---|"]
    for run in runs:
        for number, (on, off) in enumerate(zip(run.with_log, run.without_log, strict=True)):
            lines.append(f"| {run.backend} | {number} | {on:.3f} | {off:.3f} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.change_feed")
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--changes", type=int, default=20_000)
    parser.add_argument("--no-save", action="store_true")
    options = parser.parse_args(argv)
    backends = ["sqlite", "postgresql"] if options.backend == "both" else [options.backend]
    load_before = os.getloadavg()
    runs = [run_backend(backend, options.batches, options.changes) for backend in backends]
    facts = machine_facts([], "change_feed", (load_before, os.getloadavg()))
    lines = verdict(runs)
    output = "\n".join(["\n".join(f"- {line}" for line in lines), "", *details(runs)])
    print("\n".join([*facts, output]))
    if not options.no_save:
        print(f"written to {publish(PAGE, Run(TOPIC, TITLE, facts, lines, output))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
