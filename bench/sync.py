"""Issue 14: export and restore of 100,000 entities against a plain Core select + JSON write.

On a database of its own (Samples seeded through Core, as ``--queries-only`` does):

1. **Export**: ``save_export`` (one snapshot, rows streamed with ``yield_per``, gzip JSON
   lines, SHA-256 per table) against the plain way — ``select(table)`` of every exported
   table with ``fetchall()``, each row ``json.dumps``-ed into a gzip file. Rows/s and the
   peak of Python memory (tracemalloc, in a second run: tracing slows the run it watches).
2. **Restore**: ``flask sync restore``'s ``restore`` (verify pass + load in one transaction)
   into a new empty database of the same backend, against the plain way — reading the plain
   export back and ``executemany`` INSERTs of the same rows into another new database.

Targets: the export streams (its peak memory does not grow with the rows: below a quarter of
the plain way's and under 100 MiB), and both run at no less than half the plain way's rows/s.
"""
from __future__ import annotations

import gc
import gzip
import json
import os
import secrets
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flask_migrate import upgrade
from sqlalchemy import insert, select

from bench.harness import open_bench
from bench.report import machine_facts
from bench.results import Run, publish
from bench.write import core_seed
from labapp import create_app
from labapp.blobs import content_of
from labapp.db import db
from labapp.exports import service
from labapp.exports.archive import decode_value
from labapp.exports.restore import restore
from tests.databases import new_database

TOPIC, TITLE = "export-restore", "Export and restore of 100,000 entities (issue 14)"
MEMORY_TARGET = 100 * 1024 * 1024


def traced_peak(call: Callable[[], Any]) -> int:
    """The peak of Python memory allocated during ``call`` (tracemalloc; a run of its own,
    since tracing slows the run it watches)."""
    gc.collect()
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@dataclass
class Measured:
    seconds: float
    rows: int
    peak: int

    @property
    def rate(self) -> float:
        return self.rows / self.seconds


@dataclass
class SyncResult:
    backend: str
    entities: int
    export: Measured
    plain_export: Measured
    restore: Measured
    plain_restore: Measured
    size: int
    plain_size: int

    @property
    def streams(self) -> bool:
        return (self.export.peak < MEMORY_TARGET
                and self.export.peak * 4 < max(self.plain_export.peak, 1))

    @property
    def ok(self) -> bool:
        return (self.streams and self.export.rate * 2 >= self.plain_export.rate
                and self.restore.rate * 2 >= self.plain_restore.rate)


def _measure(call: Callable[[], int], again: Callable[[], Any]) -> Measured:
    """Time ``call`` untraced, then trace the memory of ``again`` (the same work)."""
    start = time.perf_counter()
    rows = call()
    seconds = time.perf_counter() - start
    return Measured(seconds, rows, traced_peak(again))


def plain_export(engine: Any, path: Path) -> int:
    """The plain way: every table fetched whole, each row json.dumps-ed into gzip lines."""
    rows = 0
    with engine.connect() as connection, gzip.open(path, "wt", encoding="utf-8") as out:
        for table in service.exported_tables():
            fetched = connection.execute(select(table)).fetchall()
            out.write(json.dumps({"table": table.name}) + "\n")
            for row in fetched:
                out.write(json.dumps(list(row), default=str) + "\n")
            rows += len(fetched)
    return rows


def plain_restore(engine: Any, path: Path) -> int:
    """The plain way back: the rows decoded and INSERTed with executemany per table."""
    tables = {table.name: table for table in service.exported_tables()}
    rows = 0
    with engine.connect() as connection, gzip.open(path, "rt", encoding="utf-8") as source:
        if connection.dialect.name == "sqlite":
            connection.exec_driver_sql("PRAGMA defer_foreign_keys = ON")
        table, batch = None, []
        for line in source:
            value = json.loads(line)
            if isinstance(value, dict):
                if batch:
                    connection.execute(insert(table), batch)
                table, batch = tables[value["table"]], []
                continue
            batch.append({column.key: decode_value(column, item)
                          for column, item in zip(table.columns, value, strict=True)})
            rows += 1
        if batch:
            connection.execute(insert(table), batch)
        connection.commit()
    return rows


@contextmanager
def _empty_database(backend: str) -> Iterator[Any]:
    """An app on a new database with the schema (migrations) and no rows."""
    with tempfile.TemporaryDirectory(prefix="labapp-bench-sync-") as tmp:
        instance = Path(tmp) / "instance"
        with new_database(instance, backend, prefix="labapp_bench", durable=True) as url:
            app = create_app({"INSTANCE_PATH": str(instance), "DATABASE_URL": url,
                              "SECRET_KEY": secrets.token_hex(32)})
            try:
                with app.app_context():
                    upgrade(directory=app.extensions["migrate"].directory)
                    yield app
            finally:
                with app.app_context():
                    db.session.remove()
                    db.engine.dispose()


def run(backend: str, entities: int, log: Callable[[str], None] = print) -> SyncResult:
    with open_bench(backend) as bench:
        core_seed(bench, entities, log=log)
        app = bench.app
        instance = app.config["LABAPP"]["INSTANCE_PATH"]
        plain_path = Path(instance) / "plain.jsonl.gz"
        with app.app_context():
            exported: dict[str, Any] = {}

            def export() -> int:
                result = service.save_export(db.engine, instance, content_of)
                exported["path"] = Path(instance) / "sync" / result.filename
                manifest = json.loads(exported["path"].with_name(
                    result.filename + ".manifest.json").read_text())
                return sum(entry["rows"] for entry in manifest["tables"].values())

            export_measured = _measure(export, export)
            log(f"  [{backend}] export: {export_measured.rows:,} rows in "
                f"{export_measured.seconds:.1f} s, peak +{export_measured.peak >> 20} MiB")
            plain_measured = _measure(lambda: plain_export(db.engine, plain_path),
                                      lambda: plain_export(db.engine, plain_path))
            log(f"  [{backend}] plain export: {plain_measured.seconds:.1f} s, "
                f"peak +{plain_measured.peak >> 20} MiB")
        restored = _restore_measured(backend, _restore_rows, exported["path"])
        log(f"  [{backend}] restore: {restored.seconds:.1f} s, peak +{restored.peak >> 20} MiB")
        plain_restored = _restore_measured(backend, plain_restore, plain_path)
        log(f"  [{backend}] plain restore: {plain_restored.seconds:.1f} s, "
            f"peak +{plain_restored.peak >> 20} MiB")
        return SyncResult(backend, entities, export_measured, plain_measured, restored,
                          plain_restored, exported["path"].stat().st_size,
                          plain_path.stat().st_size)


def _restore_rows(engine: Any, path: Path) -> int:
    checked = restore(engine, path)
    return sum(checked.rows.values())


def _restore_measured(backend: str, load: Callable[[Any, Path], int], path: Path) -> Measured:
    """``load(engine, path)`` into a new empty database, timed; then into another one,
    traced. Making the databases and their schema is outside both."""
    with _empty_database(backend):
        start = time.perf_counter()
        rows = load(db.engine, path)
        seconds = time.perf_counter() - start
    with _empty_database(backend):
        peak = traced_peak(lambda: load(db.engine, path))
    return Measured(seconds, rows, peak)


def _row(name: str, ours: Measured, plain: Measured) -> str:
    return (f"| {name} | {ours.rows:,} | {ours.seconds:.1f} s | {ours.rate:,.0f} | "
            f"{ours.peak / 2**20:.1f} MiB | {plain.seconds:.1f} s | {plain.rate:,.0f} | "
            f"{plain.peak / 2**20:.1f} MiB | {ours.rate / plain.rate:.2f} |")


def render(results: list[SyncResult], facts: list[str]) -> str:
    lines = [*facts, "",
             "| backend / step | rows | labapp | rows/s | peak memory | plain | rows/s | "
             "peak memory | rate ratio |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(_row(f"{r.backend} export", r.export, r.plain_export))
        lines.append(_row(f"{r.backend} restore", r.restore, r.plain_restore))
    lines.append("")
    for r in results:
        verdict = "PASS" if r.ok else "MISS"
        lines.append(
            f"- {r.backend}, {r.entities:,} entities: **{verdict}** — export peak "
            f"{r.export.peak / 2**20:.1f} MiB against {r.plain_export.peak / 2**20:.1f} MiB "
            f"(streams: {'yes' if r.streams else 'no'}); export {r.export.rate:,.0f} rows/s "
            f"against {r.plain_export.rate:,.0f}; restore {r.restore.rate:,.0f} rows/s "
            f"against {r.plain_restore.rate:,.0f}; file {r.size / 2**20:.1f} MiB against "
            f"{r.plain_size / 2**20:.1f} MiB.")
    return "\n".join(lines) + "\n"


def summary(results: list[SyncResult]) -> list[str]:
    """Issue 14's targets (the export streams; both steps at half the plain way's rows/s),
    one line per database."""
    return [f"{r.backend}: export {r.export.rate:,.0f} rows/s against {r.plain_export.rate:,.0f} "
            f"plain ({r.export.rate / r.plain_export.rate:.2f}×), peak "
            f"{r.export.peak / 2**20:.1f} MiB against {r.plain_export.peak / 2**20:.1f} MiB; "
            f"restore {r.restore.rate:,.0f} rows/s against {r.plain_restore.rate:,.0f} "
            f"({r.restore.rate / r.plain_restore.rate:.2f}×) (targets: streams, ≥ 0.5× each): "
            f"{'PASS' if r.ok else 'FAIL'}" for r in results]


def main_part(backends: tuple[str, ...], entities: int, save_to: Any, command: str) -> int:
    """``--sync-only``: run, print the report, publish it unless ``save_to`` is None."""
    load_before = os.getloadavg()
    results = [run(backend, entities) for backend in backends]
    facts = machine_facts([], command, (load_before, os.getloadavg()))
    block = render(results, facts)
    print("\n" + block)
    if save_to is not None:
        written = publish(save_to, Run(TOPIC, TITLE, facts, summary(results), block))
        print(f"written to {written} and {save_to}")
    return 0 if all(r.ok for r in results) else 1
