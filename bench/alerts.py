"""Issue 23: one tick of 20 alert rules over 100,000 samples (target < 1 s on SQLite).

On a database of its own (samples seeded through Core, as the other benches do; expiry
dates spread over the coming year), 20 rules on Sample tell the reader and the admin:
amounts below thresholds, expiry within a window (relative dates), names with a prefix,
each matching 0.1–5 % of the samples. Measured, each with ``evaluate(now)``:

1. the first tick: every matching item starts matching (states inserted, bells raised);
2. steady ticks, nothing changed (the per-minute cost): median and worst of ``RUNS``;
3. a tick after 200 samples changed (some start, some stop matching).

On SQLite each tick's write units are timed too, from ``BEGIN IMMEDIATE`` (the write lock
taken) to their commit: the longest is how long the tick kept other writers waiting
(issue 33 §3: ≤ 250 ms).

Run: ``python -m bench.alerts [--samples 100000] [--backend sqlite|postgresql]``.
"""
from __future__ import annotations

import argparse
import statistics
import time
from datetime import UTC, date, datetime, timedelta

from sqlalchemy import event, func, select, update
from sqlalchemy.engine import Connection, Engine

from bench.harness import BATCH, READER, Bench, open_bench, timed
from bench.write import core_insert, core_rows
from labapp.access.grant_sets import actor_for
from labapp.alerts import service as rules
from labapp.alerts.evaluate import Report, evaluate
from labapp.db import db, transaction
from labapp.model import AlertState, Notification, Sample, User

RULES = 20
RUNS = 10
TARGET = 1.0
NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def _filters() -> list[str]:
    """Twenty filters, each matching a small share of the seeded samples."""
    found = [f"amount le {5 + 0.5 * number}" for number in range(7)]
    found += [f"expiryDate lt now() add duration'P{days}D'" for days in (1, 3, 7, 14, 21, 30)]
    found += [f"startswith(name,'S-000{digit}')" for digit in range(5)]
    found += ["amount le 12 and expiryDate lt now() add duration'P60D'",
              "unit eq 'mL' and amount le 11"]
    assert len(found) == RULES
    return found


def _seed(bench: Bench, total: int) -> None:
    """The samples through Core, a quarter of them expiring within the coming year, and
    the rules, made as the admin through the service."""
    start = date(2026, 11, 25)
    for base in range(0, total, BATCH):
        entities, samples = core_rows(bench, range(base, min(base + BATCH, total)))
        for offset, sample in enumerate(samples):
            if (base + offset) % 4 == 0:
                sample["expiry_date"] = start + timedelta(days=(base + offset) % 365)
        core_insert(bench.engine, (entities, samples))
    print(f"  [{bench.backend}] {total:,} samples seeded through Core")
    with bench.app.app_context(), transaction():
        admin = actor_for(db.session.get(User, "admin"), method=None)
        for number, text in enumerate(_filters()):
            rules.create(admin, {"name": f"Rule {number}", "eClass": "Sample", "filter": text,
                                 "recipients": {"userIDs": ["admin", READER]},
                                 "channels": ["bell"], "cadence": "immediate",
                                 "active": True})


WRITE_UNIT_TARGET = 0.25  # seconds: the longest a write unit of the worker may hold the lock


class WriteUnits:
    """The durations of the write units (``BEGIN IMMEDIATE`` to commit or rollback) on an
    SQLite engine, while :meth:`recording`."""

    def __init__(self, engine: Engine) -> None:
        self.seconds: list[float] = []
        self.longest = (0.0, "")  # the longest unit and its first write statement
        event.listen(engine, "begin", self._begin)
        event.listen(engine, "before_cursor_execute", self._statement)
        event.listen(engine, "commit", self._end)
        event.listen(engine, "rollback", self._end)

    def _begin(self, connection: Connection) -> None:
        if connection.get_execution_options().get("labapp_write"):
            connection.info["bench.write_began"] = time.perf_counter()
            connection.info["bench.first_write"] = ""

    def _statement(self, connection: Connection, _cursor: object, statement: str,
                   *_: object) -> None:
        if connection.info.get("bench.first_write") == "" and not statement.startswith(
                ("SELECT", "BEGIN")):
            connection.info["bench.first_write"] = " ".join(statement.split())[:70]

    def _end(self, connection: Connection) -> None:
        began = connection.info.pop("bench.write_began", None)
        first = connection.info.pop("bench.first_write", "")
        if began is not None:
            self.seconds.append(time.perf_counter() - began)
            self.longest = max(self.longest, (self.seconds[-1], first))

    def take(self) -> list[float]:
        """The durations recorded since the last take."""
        taken, self.seconds = self.seconds, []
        return taken


def _tick(bench: Bench, now: datetime) -> tuple[float, Report]:
    with bench.app.app_context():
        seconds, report = timed(lambda: evaluate(now))
        db.session.remove()
    return seconds, report


def _longest(units: list[float]) -> str:
    if not units:
        return "no write unit timed (PostgreSQL: no database-wide write lock)"
    longest = max(units)
    return (f"{len(units)} write units, longest {longest * 1000:.0f} ms (target ≤ "
            f"{WRITE_UNIT_TARGET * 1000:.0f} ms: "
            f"{'met' if longest <= WRITE_UNIT_TARGET else 'MISSED'})")


def run(backend: str, total: int) -> dict[str, float]:
    """Seed, then time the first, steady and changed ticks; prints and returns them."""
    with open_bench(backend) as bench:
        _seed(bench, total)
        with bench.app.app_context():
            units = WriteUnits(db.engine)
        first, report_first = _tick(bench, NOW)
        first_units = units.take()
        print(f"  [{backend}] first tick {first:.3f} s: {report_first.matching:,} matching "
              f"items, {report_first.started:,} started, {report_first.notifications} bells; "
              f"{_longest(first_units)}; the longest began with: {units.longest[1]}")
        steady = [_tick(bench, NOW + timedelta(seconds=60 * (run + 1)))[0]
                  for run in range(RUNS)]
        with bench.engine.begin() as connection:
            ids = connection.scalars(select(Sample.id).order_by(Sample.id).limit(200)).all()
            connection.execute(update(Sample).where(Sample.id.in_(ids[:100])).values(amount=1.0))
            connection.execute(update(Sample).where(Sample.id.in_(ids[100:])).values(amount=99.0))
        steady_units = units.take()
        changed, report = _tick(bench, NOW + timedelta(minutes=RUNS + 1))
        changed_units = units.take()
        with bench.app.app_context():
            states = db.session.scalar(select(func.count()).select_from(AlertState))
            bells = db.session.scalar(select(func.count()).select_from(Notification))
        median = statistics.median(steady)
        print(f"  [{backend}] steady tick median {median:.3f} s, worst {max(steady):.3f} s "
              f"(target < {TARGET:.0f} s: {'met' if median < TARGET else 'MISSED'})")
        print(f"  [{backend}] tick after 200 changes {changed:.3f} s: {report.started} "
              f"started, {report.stopped} stopped; {states:,} states, {bells} bells in all")
        print(f"  [{backend}] steady ticks: {_longest(steady_units)}; tick after changes: "
              f"{_longest(changed_units)}")
        return {"first": first, "steady_median": median, "steady_worst": max(steady),
                "changed": changed,
                "longest_write_unit": max(first_units + steady_units + changed_units,
                                          default=0.0),
                "first_longest_unit": max(first_units, default=0.0),
                "first_units": len(first_units),
                "steady_longest_unit": max(steady_units, default=0.0),
                "changed_longest_unit": max(changed_units, default=0.0),
                "matching": report_first.matching}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    arguments = parser.parse_args()
    started = time.perf_counter()
    run(arguments.backend, arguments.samples)
    print(f"  done in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
