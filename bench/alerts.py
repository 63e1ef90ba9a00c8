"""Issue 23: one tick of 20 alert rules over 100,000 samples (target < 1 s on SQLite).

On a database of its own (samples seeded through Core, as the other benches do; expiry
dates spread over the coming year), 20 rules on Sample tell the reader and the admin:
amounts below thresholds, expiry within a window (relative dates), names with a prefix,
each matching 0.1–5 % of the samples. Measured, each with ``evaluate(now)``:

1. the first tick: every matching item starts matching (states inserted, bells raised);
2. steady ticks, nothing changed (the per-minute cost): median and worst of ``RUNS``;
3. a tick after 200 samples changed (some start, some stop matching).

Run: ``python -m bench.alerts [--samples 100000] [--backend sqlite|postgresql]``.
"""
from __future__ import annotations

import argparse
import statistics
import time
from datetime import UTC, date, datetime, timedelta

from sqlalchemy import func, select, update

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


def _tick(bench: Bench, now: datetime) -> tuple[float, Report]:
    with bench.app.app_context():
        seconds, report = timed(lambda: evaluate(now))
        db.session.remove()
    return seconds, report


def run(backend: str, total: int) -> dict[str, float]:
    """Seed, then time the first, steady and changed ticks; prints and returns them."""
    with open_bench(backend) as bench:
        _seed(bench, total)
        first, report = _tick(bench, NOW)
        print(f"  [{backend}] first tick {first:.3f} s: {report.matching:,} matching items, "
              f"{report.started:,} started, {report.notifications} bells")
        steady = [_tick(bench, NOW + timedelta(seconds=60 * (run + 1)))[0]
                  for run in range(RUNS)]
        with bench.engine.begin() as connection:
            ids = connection.scalars(select(Sample.id).order_by(Sample.id).limit(200)).all()
            connection.execute(update(Sample).where(Sample.id.in_(ids[:100])).values(amount=1.0))
            connection.execute(update(Sample).where(Sample.id.in_(ids[100:])).values(amount=99.0))
        changed, report = _tick(bench, NOW + timedelta(minutes=RUNS + 1))
        with bench.app.app_context():
            states = db.session.scalar(select(func.count()).select_from(AlertState))
            bells = db.session.scalar(select(func.count()).select_from(Notification))
        median = statistics.median(steady)
        print(f"  [{backend}] steady tick median {median:.3f} s, worst {max(steady):.3f} s "
              f"(target < {TARGET:.0f} s: {'met' if median < TARGET else 'MISSED'})")
        print(f"  [{backend}] tick after 200 changes {changed:.3f} s: {report.started} "
              f"started, {report.stopped} stopped; {states:,} states, {bells} bells in all")
        return {"first": first, "steady_median": median, "steady_worst": max(steady),
                "changed": changed}


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
