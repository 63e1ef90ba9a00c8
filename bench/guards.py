"""Inputs that once took minutes (issue 33 §4 moved their time bounds here from the tests,
which keep the functional checks): each is timed, best of ``ROUNDS``, against its bound.

- ``label_names.distinct`` over a page of 300 labels of 10,000 characters (target 2 s);
- ``allocation.plan_moves`` of 10,000 items into a 702 × 999 grid whose first row is
  taken: walking the grid per item took minutes (target 5 s);
- ``open_table`` refusing a CSV sample of 40,000 ``,"`` pairs: ``csv.Sniffer`` took 37 s
  over it (target 5 s).

``python -m bench.guards``; no database.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.report import machine_facts
from bench.results import PAGE, Run, publish
from labapp.imports.limits import ImportRejected
from labapp.imports.spreadsheets import open_table
from labapp.storage.allocation import Request, Room, plan_moves
from labapp.storage.label_names import distinct
from labapp.storage.labels import FORMATS

TOPIC = "guards"
TITLE = "Inputs that once took minutes: label names, the largest grid, a hostile CSV (issue 33)"
ROUNDS = 3


def long_label_names() -> None:
    names = ["x" * 9_999 + str(digit) for digit in range(10)] + ["y" * 10_000] * 2
    names += ["z" * 5_000 + str(digit) + "z" * 4_999 for digit in range(10)]
    names += [f"w{number}" + "w" * 10_000 for number in range(278)]
    distinct(names, FORMATS["sheet"].name_columns)


def largest_grid() -> None:
    taken = {f"A{column}": "X" for column in range(1, 1000)}
    room = Room(id="BOX", status="Active", rows=702, columns=999, capacity=None,
                stored=len(taken), occupied=taken)
    plan_moves({"BOX": room}, [Request(index, "BOX") for index in range(10_000)])


def hostile_csv() -> None:
    with tempfile.TemporaryDirectory() as folder:
        sample = Path(folder) / "slow.csv"
        sample.write_text("Name,Amount\n" + ',"' * 40_000 + "\n")
        try:
            open_table(sample, sample.name)
        except ImportRejected:
            return
        raise RuntimeError("the hostile sample was accepted")


GUARDS: list[tuple[str, Callable[[], None], float]] = [
    ("distinct label names, 300 × 10,000 characters", long_label_names, 2.0),
    ("plan_moves, 10,000 items into a 702 × 999 grid", largest_grid, 5.0),
    ("open_table refusing a hostile CSV sample", hostile_csv, 5.0),
]


def best_of(work: Callable[[], None], rounds: int = ROUNDS) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def main() -> int:
    load_before = os.getloadavg()
    verdict = []
    for name, work, target in GUARDS:
        took = best_of(work)
        verdict.append(f"{name}: {took * 1000:,.0f} ms (best of {ROUNDS}); target ≤ "
                       f"{target:.0f} s, ratio {took / target:.2f}: "
                       f"{'**PASS**' if took <= target else '**FAIL**'}")
    facts = machine_facts([], "guards", (load_before, os.getloadavg()))
    output = "\n".join(verdict)
    print("\n".join([*facts, output]))
    print(f"written to {publish(PAGE, Run(TOPIC, TITLE, facts, verdict, output))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
