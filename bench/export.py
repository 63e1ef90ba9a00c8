"""Issue 21 §3: a list exported as CSV and XLSX against a plain Core select + csv writer.

On a database of its own (Samples seeded through Core, as ``--queries-only`` does), as the
reader whose department predicate applies (every seeded sample is in the reader's
department):

1. **CSV**: ``GET /api/entity/Sample?$format=csv`` (the list page's default columns, the
   location looked up by path, a number with its unit) read to the end through the test
   client, against the plain way — the same columns of the same rows in the same order in
   one Core SELECT (same visibility predicate), each row written by ``csv.writer``. The two
   alternate; the median of the runs is reported, as rows/s.
2. **XLSX**: ``GET /api/entity/Sample?$format=xlsx`` read to the end, rows/s.
3. **Memory**: the peak of Python memory (tracemalloc, runs of their own: tracing slows the
   run it watches) of each export of every row and of a tenth of them (``$top``): an export
   that streams has about the same peak for both.

Target: CSV through the API at no less than half the plain way's rows/s.
"""
from __future__ import annotations

import csv
import io
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from sqlalchemy import select

from bench.harness import Bench, median, open_bench
from bench.read import _visibility
from bench.report import machine_facts
from bench.results import Run, publish
from bench.sync import traced_peak
from bench.write import core_seed
from labapp.model import Entity, Sample

TOPIC, TITLE = "list-exports", "Lists exported as CSV and XLSX (issue 21 §3)"
RUNS = 3
_entity = Entity.__table__
_sample = Sample.__table__
# The columns the list page shows a Sample by default (and the export writes), in Core.
_COLUMNS = [_entity.c.id, _entity.c.name, _entity.c.status, _entity.c.type,
            _entity.c.modified_utc, _sample.c.well, _sample.c.location_id,
            _sample.c.position, _sample.c.amount, _sample.c.unit]


@dataclass
class ExportResult:
    backend: str
    entities: int
    csv_runs: list[float]
    core_runs: list[float]
    xlsx_runs: list[float]
    rows: int
    csv_bytes: int
    xlsx_bytes: int
    peaks: dict[str, tuple[int, int]]  # path → (peak for a tenth, peak for every row)

    def rate(self, runs: list[float]) -> float:
        return self.rows / median(runs)

    @property
    def ratio(self) -> float:
        return self.rate(self.csv_runs) / self.rate(self.core_runs)

    @property
    def ok(self) -> bool:
        return self.ratio >= 0.5


def _download(bench: Bench, file_format: str, top: int | None = None) -> tuple[int, int]:
    """``(rows, bytes)`` of one export through the API, read chunk by chunk (rows counted
    for CSV only)."""
    options = {"$format": file_format, **({"$top": top} if top else {})}
    response = bench.client.get("/api/entity/Sample?" + urlencode(options),
                                headers=bench.reader_headers, buffered=False)
    if response.status_code != 200:
        raise RuntimeError(f"export failed: {response.get_data(as_text=True)}")
    rows = size = 0
    try:
        for chunk in response.iter_encoded():
            size += len(chunk)
            rows += chunk.count(b"\n")
    finally:
        response.close()
    return rows - 1, size


def plain_csv(bench: Bench, top: int | None = None) -> tuple[int, int]:
    """The plain way: the same rows in one Core SELECT, each written by ``csv.writer``."""
    joined = _entity.join(_sample, _sample.c.id == _entity.c.id)
    statement = (select(*_COLUMNS).select_from(joined).where(_visibility(bench, "reader"))
                 .order_by(_entity.c.id).limit(top))
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    rows = size = 0
    with bench.engine.connect() as connection:
        result = connection.execution_options(yield_per=1000).execute(statement)
        for partition in result.partitions():
            writer.writerows(partition)
            size += len(buffer.getvalue().encode("utf-8"))
            buffer.seek(0)
            buffer.truncate()
            rows += len(partition)
    return rows, size


def _timed(call: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


def run(backend: str, entities: int, runs: int = RUNS,
        log: Callable[[str], None] = print) -> ExportResult:
    with open_bench(backend) as bench:
        core_seed(bench, entities, log=log)
        _download(bench, "csv", top=1000)  # warm-up: caches, pool, filter parse
        csv_runs, core_runs, xlsx_runs = [], [], []
        rows = csv_bytes = xlsx_bytes = 0
        for _ in range(runs):
            seconds, (rows, csv_bytes) = _timed(lambda: _download(bench, "csv"))
            csv_runs.append(seconds)
            seconds, (core_rows, _size) = _timed(lambda: plain_csv(bench))
            core_runs.append(seconds)
            if core_rows != rows:
                raise RuntimeError(f"API exported {rows} rows, Core {core_rows}")
            log(f"  [{backend}] CSV: API {csv_runs[-1]:.2f} s, Core {core_runs[-1]:.2f} s")
        for _ in range(runs):
            seconds, (_rows, xlsx_bytes) = _timed(lambda: _download(bench, "xlsx"))
            xlsx_runs.append(seconds)
            log(f"  [{backend}] XLSX: API {xlsx_runs[-1]:.2f} s")
        tenth = max(rows // 10, 1)
        peaks = {
            "CSV (API)": (traced_peak(lambda: _download(bench, "csv", tenth)),
                          traced_peak(lambda: _download(bench, "csv"))),
            "XLSX (API)": (traced_peak(lambda: _download(bench, "xlsx", tenth)),
                           traced_peak(lambda: _download(bench, "xlsx"))),
            "plain Core + csv": (traced_peak(lambda: plain_csv(bench, tenth)),
                                 traced_peak(lambda: plain_csv(bench))),
        }
        for name, (small, full) in peaks.items():
            log(f"  [{backend}] peak {name}: {small / 2**20:.1f} MiB at {tenth:,} rows, "
                f"{full / 2**20:.1f} MiB at {rows:,}")
        return ExportResult(backend, entities, csv_runs, core_runs, xlsx_runs, rows,
                            csv_bytes, xlsx_bytes, peaks)


def render(results: list[ExportResult], facts: list[str]) -> str:
    lines = [*facts, "",
             "| backend | rows | CSV API rows/s | plain Core + csv rows/s | ratio (≥ 0.50) | "
             "XLSX API rows/s | CSV size | XLSX size |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(
            f"| {r.backend} | {r.rows:,} | {r.rate(r.csv_runs):,.0f} | "
            f"{r.rate(r.core_runs):,.0f} | {r.ratio:.2f} | {r.rate(r.xlsx_runs):,.0f} | "
            f"{r.csv_bytes / 2**20:.1f} MiB | {r.xlsx_bytes / 2**20:.1f} MiB |")
    lines += ["", "| backend / path | peak at a tenth of the rows | peak at every row |",
              "|---|---|---|"]
    for r in results:
        for name, (small, full) in r.peaks.items():
            lines.append(f"| {r.backend} {name} | {small / 2**20:.1f} MiB | "
                         f"{full / 2**20:.1f} MiB |")
    lines.append("")
    for r in results:
        lines.append(f"- {r.backend}, {r.entities:,} entities: **{'PASS' if r.ok else 'MISS'}**"
                     f" — CSV through the API at {r.ratio:.0%} of the plain way's rows/s "
                     f"(median of {len(r.csv_runs)} interleaved runs).")
    return "\n".join(lines) + "\n"


def summary(results: list[ExportResult]) -> list[str]:
    """Issue 21 §3's target (CSV at half the plain way's rows/s), one line per database."""
    return [f"{r.backend}: CSV {r.rate(r.csv_runs):,.0f} rows/s against plain Core + csv "
            f"{r.rate(r.core_runs):,.0f} = {r.ratio:.2f}× (target ≥ 0.50×; XLSX "
            f"{r.rate(r.xlsx_runs):,.0f} rows/s): {'PASS' if r.ok else 'FAIL'}" for r in results]


def main_part(backends: tuple[str, ...], entities: int, runs: int, save_to: Any,
              command: str) -> int:
    """``--export-only``: run, print the report, publish it unless ``save_to`` is None."""
    load_before = os.getloadavg()
    results = [run(backend, entities, runs) for backend in backends]
    facts = machine_facts([], command, (load_before, os.getloadavg()))
    block = render(results, facts)
    print("\n" + block)
    if save_to is not None:
        written = publish(save_to, Run(TOPIC, TITLE, facts, summary(results), block))
        print(f"written to {written} and {save_to}")
    return 0 if all(r.ok for r in results) else 1
