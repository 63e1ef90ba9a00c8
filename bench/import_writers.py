"""Issue 33 §3: what other writers get while a spreadsheet import's commit holds SQLite's
write lock.

On a database of its own, the layout and the CSV file of :mod:`bench.imports` (``--rows``
rows, 100,000 by default) are queued as a commit job and run the way the worker runs it
(claimed, planned, then written in one transaction), in a thread with an application
context of its own. Meanwhile a writer sends ``POST /api/entity`` (one experiment) through
the application's WSGI stack, one request after the other with :data:`PAUSE` s between
them, until the job ends. Printed: each writer's start (seconds after the job began), its
status and time, and for refused writes the message and ``Retry-After``; then the commit's
length and the writers by outcome.

Run: ``python -m bench.import_writers [--rows 100000]`` (SQLite; PostgreSQL takes no
database-wide write lock).
"""
from __future__ import annotations

import argparse
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from bench.harness import Bench, open_bench
from bench.imports import _admin, seed, write_files
from labapp.db import db, transaction
from labapp.imports import jobs, service, uploads
from labapp.model import ImportJob

PAUSE = 0.5  # seconds between two writes


@dataclass(frozen=True)
class Write:
    started: float  # seconds after the job was claimed
    seconds: float
    status: int
    detail: str
    retry_after: str | None


def _queue(bench: Bench, path: Path) -> str:
    with bench.app.app_context():
        with path.open("rb") as stream:
            received = uploads.receive(stream)
        with transaction():
            job = service.start_import(_admin(), received, service.ImportRequest(
                eclass="Sample", filename=path.name, dry_run=False))
        db.session.remove()
        return job.id


def _run_job(bench: Bench, job_id: str, phases: dict[str, float]) -> None:
    with bench.app.app_context():
        assert jobs.claim(job_id) == job_id
        phases["claimed"] = time.perf_counter()

        def report(phase: str, _done: int, _total: int | None) -> None:
            phases.setdefault(phase, time.perf_counter())

        jobs.run(job_id, report)
        phases["ended"] = time.perf_counter()
        db.session.remove()


def _write(bench: Bench, number: int, began: float) -> Write:
    start = time.perf_counter()
    response = bench.client.post("/api/entity", headers=bench.admin_headers, json={
        "entities": [{"eClass": "Experiment", "name": f"Writer {number}"}]})
    body = response.get_json() or {}
    return Write(start - began, time.perf_counter() - start, response.status_code,
                 str(body.get("detail", "")), response.headers.get("Retry-After"))


def run(rows: int) -> list[Write]:
    with open_bench("sqlite") as bench, tempfile.TemporaryDirectory() as folder:
        layout = seed(bench, rows, print)
        path = write_files(layout, rows, Path(folder))["CSV"]
        job_id = _queue(bench, path)
        phases: dict[str, float] = {}
        worker = threading.Thread(target=_run_job, args=(bench, job_id, phases))
        began = time.perf_counter()
        worker.start()
        writes: list[Write] = []
        while worker.is_alive():
            writes.append(_write(bench, len(writes), began))
            worker.join(timeout=PAUSE)
        with bench.app.app_context():
            job = db.session.get(ImportJob, job_id)
            assert job is not None
            print(f"  import {job.status}: {job.counts} ({job.error or 'no error'})")
        writing = phases.get("writing", phases["ended"])
        print(f"  plan {writing - phases['claimed']:.1f} s, commit (writing, the write lock "
              f"held) {phases['ended'] - writing:.1f} s")
        for write in writes:
            print(f"  t={write.started:6.1f} s  {write.status}  {write.seconds:5.2f} s  "
                  f"{write.detail[:140]}"
                  + (f"  Retry-After: {write.retry_after}" if write.retry_after else ""))
        during = [write for write in writes if writing - began <= write.started
                  < phases["ended"] - began]
        print(f"  writers during the commit: {dict(Counter(write.status for write in during))},"
              f" longest wait {max((write.seconds for write in during), default=0):.2f} s")
        return writes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    arguments = parser.parse_args()
    run(arguments.rows)


if __name__ == "__main__":
    main()
