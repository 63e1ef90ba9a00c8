"""Issue 22: a spreadsheet of Samples imported, against the API's own bulk create
(``python -m bench --imports-only [--entities N] [--backend ...] [--quick]`` writes a run under
``bench/runs/`` and its verdict on ``bench/RESULTS.md``; ``python -m bench.imports [--rows N]
[--quick]`` prints only).

On a database of its own: 20 experiments, and one 10 × 10 box per 100 rows under
``Freezer 1 / Rack NN`` (made through the entity batch, not measured). The file has, per row,
a name, a barcode, a volume in mL written with a decimal comma, an expiry date written
day-first (``24.12.2027``), an experiment by name, a location by path
(``Freezer 1 / Rack 03 / Box 0012``) and its slot; one row in ten names the row above it as
its parent (a reference to a row of the same file).

1. **the API's bulk create**: :func:`labapp.entities.service.save_batch` over the same rows
   already in API form (ids for references, numbers as numbers), in chunks of 500 — the
   request body of ``POST /api/entity`` without HTTP and JSON;
2. **dry run**: ``open_table`` + ``plan_import`` of the CSV and of the XLSX file;
3. **commit**: ``commit_import`` of that plan (re-reading the file, building the same
   items, ``save_batch`` in chunks of 500);
4. **memory**: the peak of Python memory (tracemalloc, runs of their own) of a dry run and
   commit of the CSV at a tenth of the rows and at every row: flat when about equal.

Every measured run is one transaction rolled back at its end, so each starts from the
same database. Target: commit rows/s ≥ 70% of the bulk create's; peak flat (< 100 MiB).
"""
from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness import BATCH, Bench, median, open_bench
from bench.report import machine_facts
from bench.results import Run, publish
from bench.sync import traced_peak
from labapp.access.grant_sets import actor_for
from labapp.db import db, transaction
from labapp.entities.service import save_batch
from labapp.imports.engine import commit_import, plan_import
from labapp.imports.mapping import auto_map
from labapp.imports.spreadsheets import open_table
from labapp.model import User
from labapp.model.registry import existing_class

ROWS = 100_000
EXPERIMENTS = 20
BOX_SIDE = 10
BOXES_PER_RACK = 50
RUNS = 1
TOPIC, TITLE = "imports", "Import of 100,000 rows (issue 22)"
HEADERS = ["Name", "Barcode", "Volume (mL)", "Expiry", "Experiment", "Location", "Slot",
           "Parent"]


class _Rollback(Exception):
    """Ends a measured run's transaction without keeping anything."""


@dataclass
class Layout:
    """What the seeded database holds for the rows to name."""

    experiments: list[tuple[str, str]]  # (id, name)
    boxes: list[tuple[str, str]]  # (id, path)


@dataclass
class ImportResult:
    backend: str
    rows: int
    api_runs: list[float] = field(default_factory=list)
    plan_runs: dict[str, list[float]] = field(default_factory=dict)
    commit_runs: dict[str, list[float]] = field(default_factory=dict)
    peaks: dict[str, tuple[int, int]] = field(default_factory=dict)
    file_sizes: dict[str, int] = field(default_factory=dict)

    def rate(self, runs: list[float]) -> float:
        return self.rows / median(runs)

    def ratio(self, kind: str) -> float:
        return self.rate(self.commit_runs[kind]) / self.rate(self.api_runs)


def _admin() -> Any:
    user = db.session.get(User, "admin")
    return actor_for(user, method="cli")


def seed(bench: Bench, rows: int, log: Callable[[str], None]) -> Layout:
    """Experiments and boxes (through the batch, committed)."""
    boxes = (rows + BOX_SIDE * BOX_SIDE - 1) // (BOX_SIDE * BOX_SIDE)
    racks = (boxes + BOXES_PER_RACK - 1) // BOXES_PER_RACK
    with bench.app.app_context(), transaction():
        actor = _admin()
        made = save_batch(actor, [{"eClass": "Experiment", "name": f"Exp {n:02d}"}
                                  for n in range(EXPERIMENTS)]).entities
        experiments = [(entity["id"], entity["name"]) for entity in made]
        places = save_batch(actor, [{"eClass": "Location", "id": "#f", "name": "Freezer 1"}] + [
            {"eClass": "Location", "name": f"Rack {n:02d}", "parentID": "#f"}
            for n in range(racks)]).entities
        rack_ids = [entity["id"] for entity in places[1:]]
        layout = Layout(experiments, [])
        for start in range(0, boxes, BATCH):
            items = [{"eClass": "Location", "name": f"Box {n:04d}", "rows": BOX_SIDE,
                      "columns": BOX_SIDE, "barcode": f"BOX-{n:04d}",
                      "parentID": rack_ids[n // BOXES_PER_RACK]}
                     for n in range(start, min(start + BATCH, boxes))]
            for entity in save_batch(actor, items).entities:
                layout.boxes.append((entity["id"], entity["hierarchy"]))
    log(f"  [{bench.backend}] seeded {EXPERIMENTS} experiments, {boxes:,} boxes")
    return layout


def _slot(n: int) -> str:
    cell = n % (BOX_SIDE * BOX_SIDE)
    return f"{'ABCDEFGHIJ'[cell // BOX_SIDE]}{cell % BOX_SIDE + 1}"


def _row(layout: Layout, n: int) -> list[Any]:
    volume = f"{(n % 90 + 10) / 100:.2f}".replace(".", ",")
    expiry = f"{n % 28 + 1:02d}.{n % 12 + 1:02d}.2027"
    parent = f"IMP-{n - 1:06d}" if n % 10 == 1 else ""
    return [f"IMP-{n:06d}", f"BC{n:07d}", volume, expiry,
            layout.experiments[n % EXPERIMENTS][1], layout.boxes[n // 100][1], _slot(n), parent]


def _api_item(layout: Layout, n: int) -> dict[str, Any]:
    """Row ``n`` as ``POST /api/entity`` receives it (the parent as a batch variable: it is
    always in the same chunk of 500)."""
    item = {"eClass": "Sample", "id": f"#s{n}", "name": f"IMP-{n:06d}",
            "barcode": f"BC{n:07d}", "amount": (n % 90 + 10) / 100, "unit": "mL",
            "expiryDate": f"2027-{n % 12 + 1:02d}-{n % 28 + 1:02d}",
            "experimentID": layout.experiments[n % EXPERIMENTS][0],
            "locationID": layout.boxes[n // 100][0], "position": _slot(n)}
    if n % 10 == 1:
        item["parentID"] = f"#s{n - 1}"
    return item


def write_files(layout: Layout, rows: int, folder: Path) -> dict[str, Path]:
    """The same rows as CSV (semicolons, as a European spreadsheet program saves them) and
    XLSX."""
    import openpyxl

    csv_path = folder / f"samples-{rows}.csv"
    with csv_path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, delimiter=";")
        writer.writerow(HEADERS)
        writer.writerows(_row(layout, n) for n in range(rows))
    xlsx_path = folder / f"samples-{rows}.xlsx"
    # Not write-only: then openpyxl writes the sheet's dimension and shared strings, as
    # spreadsheet programs do (a sheet without a dimension costs openpyxl a pass to find it).
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "Samples"
    sheet.append(HEADERS)
    for n in range(rows):
        sheet.append(_row(layout, n))
    workbook.save(xlsx_path)
    return {"CSV": csv_path, "XLSX": xlsx_path}


def _rolled_back(bench: Bench, work: Callable[[], Any]) -> Any:
    """Run ``work`` in one transaction and roll it back; its result."""
    result: list[Any] = []
    with bench.app.app_context():
        try:
            with transaction():
                result.append(work())
                raise _Rollback
        except _Rollback:
            pass
        db.session.remove()
    return result[0]


def api_create(bench: Bench, layout: Layout, rows: int) -> float:
    """Seconds of the bulk create of every row (chunks of 500), in one transaction."""
    def work() -> float:
        actor = _admin()
        start = time.perf_counter()
        for first in range(0, rows, BATCH):
            save_batch(actor, [_api_item(layout, n)
                               for n in range(first, min(first + BATCH, rows))])
        return time.perf_counter() - start

    seconds: float = _rolled_back(bench, work)
    return seconds


def import_file(bench: Bench, path: Path, rows: int) -> tuple[float, float]:
    """Seconds of the dry run and of the commit of ``path`` (one transaction)."""
    def work() -> tuple[float, float]:
        actor = _admin()
        spec = existing_class("Sample")
        start = time.perf_counter()
        table = open_table(path, path.name)
        plan = plan_import(actor, spec, table, auto_map(spec, table.headers))
        planned = time.perf_counter()
        if not plan.ok or plan.counts["create"] != rows:
            bad = next(outcome for outcome in plan.outcomes if outcome.errors)
            raise RuntimeError(f"the dry run found errors: {plan.counts}, first {bad}")
        written = commit_import(actor, plan)
        if len(written) != rows:
            raise RuntimeError(f"{len(written)} rows written of {rows}")
        return planned - start, time.perf_counter() - planned

    timings: tuple[float, float] = _rolled_back(bench, work)
    return timings


def run(backend: str, rows: int, runs: int = RUNS, memory: bool = True,
        log: Callable[[str], None] = print) -> ImportResult:
    result = ImportResult(backend, rows)
    with open_bench(backend) as bench, tempfile.TemporaryDirectory() as tmp:
        layout = seed(bench, rows, log)
        files = write_files(layout, rows, Path(tmp))
        result.file_sizes = {kind: path.stat().st_size for kind, path in files.items()}
        for _ in range(runs):
            result.api_runs.append(api_create(bench, layout, rows))
            log(f"  [{backend}] bulk create (save_batch): {result.api_runs[-1]:.1f} s")
            for kind, path in files.items():
                planned, committed = import_file(bench, path, rows)
                result.plan_runs.setdefault(kind, []).append(planned)
                result.commit_runs.setdefault(kind, []).append(committed)
                log(f"  [{backend}] {kind}: dry run {planned:.1f} s, commit {committed:.1f} s")
        if memory:
            tenth = max(rows // 10, 100)
            small = write_files(layout, tenth, Path(tmp))["CSV"]
            result.peaks["CSV dry run + commit"] = (
                traced_peak(lambda: import_file(bench, small, tenth)),
                traced_peak(lambda: import_file(bench, files["CSV"], rows)))
            for name, (low, high) in result.peaks.items():
                log(f"  [{backend}] peak {name}: {low / 2**20:.1f} MiB at {tenth:,} rows, "
                    f"{high / 2**20:.1f} MiB at {rows:,}")
    return result


def render(results: list[ImportResult], facts: list[str]) -> str:
    lines = [*facts, "",
             "| backend | rows | file | bulk create rows/s | dry run rows/s | commit rows/s | "
             "commit / bulk create (≥ 0.70) | dry run + commit rows/s | file size |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        for kind in r.commit_runs:
            both = [p + c for p, c in zip(r.plan_runs[kind], r.commit_runs[kind], strict=True)]
            lines.append(
                f"| {r.backend} | {r.rows:,} | {kind} | {r.rate(r.api_runs):,.0f} | "
                f"{r.rate(r.plan_runs[kind]):,.0f} | {r.rate(r.commit_runs[kind]):,.0f} | "
                f"{r.ratio(kind):.2f} | {r.rate(both):,.0f} | "
                f"{r.file_sizes[kind] / 2**20:.1f} MiB |")
    peaks = [(r, name, value) for r in results for name, value in r.peaks.items()]
    if peaks:
        lines += ["", "| backend / path | peak at a tenth of the rows | peak at every row |",
                  "|---|---|---|"]
        lines += [f"| {r.backend} {name} | {low / 2**20:.1f} MiB | {high / 2**20:.1f} MiB |"
                  for r, name, (low, high) in peaks]
    return "\n".join(lines) + "\n"


def passed(results: list[ImportResult]) -> bool:
    """Whether every commit reached 70% of the bulk create's rows/s."""
    return all(r.ratio(kind) >= 0.7 for r in results for kind in r.commit_runs)


def summary(results: list[ImportResult]) -> list[str]:
    """Issue 22's target (a commit at 70% of the bulk create's rows/s), one line per database
    and file kind."""
    return [f"{r.backend}, {kind}: commit {r.rate(r.commit_runs[kind]):,.0f} rows/s against "
            f"bulk create {r.rate(r.api_runs):,.0f} = {r.ratio(kind):.2f}× (target ≥ 0.70×; "
            f"dry run {r.rate(r.plan_runs[kind]):,.0f} rows/s): "
            f"{'PASS' if r.ratio(kind) >= 0.7 else 'FAIL'}"
            for r in results for kind in r.commit_runs]


def main_part(backends: tuple[str, ...], rows: int, runs: int, save_to: Path | None,
              command: str) -> int:
    """``python -m bench --imports-only``: run, print the report, publish it unless
    ``save_to`` is None."""
    load_before = os.getloadavg()
    results = [run(backend, rows, runs) for backend in backends]
    facts = machine_facts([], command, (load_before, os.getloadavg()))
    block = render(results, facts)
    print("\n" + block)
    if save_to is not None:
        written = publish(save_to, Run(TOPIC, TITLE, facts, summary(results), block))
        print(f"written to {written} and {save_to}")
    return 0 if passed(results) else 1


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.imports", description=__doc__)
    parser.add_argument("--rows", type=int, default=ROWS)
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="sqlite")
    parser.add_argument("--quick", action="store_true", help="10,000 rows")
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--no-memory", action="store_true", help="skip the tracemalloc runs")
    args = parser.parse_args(argv)
    if args.quick:
        args.rows = 10_000
    return args


def main(argv: list[str] | None = None) -> int:
    args = _arguments(sys.argv[1:] if argv is None else argv)
    backends = ("sqlite", "postgresql") if args.backend == "both" else (args.backend,)
    load_before = os.getloadavg()
    results = [run(backend, args.rows, args.runs, not args.no_memory) for backend in backends]
    facts = machine_facts([], "imports " + " ".join(argv or sys.argv[1:]),
                          (load_before, os.getloadavg()))
    print("\n" + render(results, facts))
    return 0 if passed(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
