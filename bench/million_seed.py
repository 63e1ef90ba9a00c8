"""The data of ``python -m bench --million``: a biobank's million samples, written through Core.

- 50 departments (the reader's own, "Benchmark", and 49 others), one project in each;
- 1,000 experiments of 5 steps each;
- storage: 20 freezers of 10 racks of 50 boxes (10,000 boxes of 10 × 10), half full;
- ``entities`` Samples (default 1,000,000): one in five belongs to the reader's department
  (the rest to the 49 others, so row-level security has work to do), the first half is stored
  (50 tubes per box, rows A-E; the boxes are the reader's department's, so the reader sees
  a box whose tubes are partly hidden), statuses, creation days over a year, expiry dates
  around today; names, descriptions and barcodes that search can find
  (:func:`bench.search._text`);
- a ``Created`` event per sample, a check-in log entry per stored tube, 200 requests
  assigned to the reader.

Rows go in batches of :data:`CHUNK` with ``executemany``; the database's own triggers (search
queue, entity tallies, suggestion indexes) fire as they would for any insert.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, insert

from bench.harness import Bench
from bench.search import _text
from labapp.model import (
    Department,
    Entity,
    EntityEvent,
    Experiment,
    Location,
    Project,
    Request,
    Sample,
    Step,
    StorageLogEntry,
)

CHUNK = 5_000
DEPARTMENTS = 50
FREEZERS, RACKS, BOXES_PER_RACK = 20, 10, 50  # 10,000 boxes
BOX_SIDE = 10
TUBES_PER_BOX = 50
EXPERIMENTS, STEPS = 1_000, 5
REQUESTS = 200
READER_SHARE = 5  # one sample in five is the reader's department's
STATUSES = ("Initial", "InProgress", "Initial", "Completed", "InProgress",
            "Initial", "Initial", "Completed", "Initial", "InProgress")

_E = Entity.__table__
_ENTITY_KEYS = tuple(_E.c.keys())


def box_id(number: int) -> str:
    return f"BOXX{number:05d}"


def sample_id(number: int) -> str:
    return f"SAMX{number:07d}"


def department_of(bench: Bench, number: int) -> str:
    """The department of sample ``number``: the reader's for one in :data:`READER_SHARE`."""
    if number % READER_SHARE == 0:
        return bench.department
    return f"DEPX{number % (DEPARTMENTS - 1) + 1:02d}"


def project_of(bench: Bench, department: str) -> str:
    return "PRJX00" if department == bench.department else "PRJX" + department[4:]


def stored_boxes(entities: int) -> int:
    """How many boxes hold tubes: half the samples, 50 a box, at most every box."""
    return min(FREEZERS * RACKS * BOXES_PER_RACK, (entities // 2) // TUBES_PER_BOX)


def slot_of(number: int) -> str:
    """The slot of stored sample ``number`` in its box (A1 … E10)."""
    within = number % TUBES_PER_BOX
    return f"{'ABCDEFGHIJ'[within // BOX_SIDE]}{within % BOX_SIDE + 1}"


class _Rows:
    """Entity rows with every column given (Core inserts need the same keys in every row)."""

    def __init__(self, bench: Bench) -> None:
        self.now = datetime.now(UTC)
        self.base = dict.fromkeys(_ENTITY_KEYS)
        self.base.update(type="Other", user_id="admin", attributes={}, created_by="admin",
                         modified_by="admin", created_utc=self.now, modified_utc=self.now,
                         version=1, status="Initial", department_id=bench.department)

    def entity(self, **values: Any) -> dict[str, Any]:
        return {**self.base, **values}


def _insert(bench: Bench, table: Any, rows: list[dict[str, Any]]) -> None:
    with bench.engine.connect() as connection:
        for start in range(0, len(rows), CHUNK):
            connection.execute(insert(table), rows[start:start + CHUNK])
        connection.commit()


def _pairs(bench: Bench, entities: list[dict], table: Any, own: list[dict]) -> None:
    """The entity rows, then their class table's rows (missing columns NULL)."""
    empty = dict.fromkeys(table.c.keys())
    _insert(bench, _E, entities)
    _insert(bench, table, [{**empty, **row} for row in own])


def _organisation(bench: Bench, rows: _Rows) -> None:
    departments = [f"DEPX{k:02d}" for k in range(1, DEPARTMENTS)]
    _pairs(bench, [rows.entity(id=d, eclass="Department", name=f"Department {d[4:]}",
                               department_id=d) for d in departments],
           Department.__table__, [{"id": d, "parent_id": None} for d in departments])
    owners = [bench.department, *departments]
    projects = [(project_of(bench, d), d) for d in owners]
    _pairs(bench, [rows.entity(id=p, eclass="Project", name=f"Project {p[4:]}",
                               department_id=d, project_id=p) for p, d in projects],
           Project.__table__, [{"id": p, "start_date": None, "end_date": None}
                               for p, _ in projects])
    experiments, steps, step_rows = [], [], []
    for k in range(EXPERIMENTS):
        project, department = projects[k % DEPARTMENTS]
        experiment = f"EXPX{k:05d}"
        experiments.append(rows.entity(id=experiment, eclass="Experiment",
                                       name=f"Screen {k:05d}", department_id=department,
                                       project_id=project))
        for index in range(STEPS):
            step = f"STPX{k * STEPS + index:05d}"
            steps.append(rows.entity(id=step, eclass="Step", name=f"Step {index + 1}",
                                     department_id=department, project_id=project))
            step_rows.append({"id": step, "experiment_id": experiment, "step_index": index,
                              "start_date": None, "end_date": None})
    _pairs(bench, experiments, Experiment.__table__,
           [{"id": e["id"], "start_date": None, "end_date": None} for e in experiments])
    _pairs(bench, steps, Step.__table__, step_rows)
    requests = [f"REQX{k:04d}" for k in range(REQUESTS)]
    _pairs(bench, [rows.entity(id=r, eclass="Request", name=f"Request {r[4:]}",
                               status=("Initial", "InProgress")[k % 2])
                   for k, r in enumerate(requests)],
           Request.__table__, [{"id": r, "assignee_id": "bench-reader", "priority": "Normal",
                                "due_date": rows.now.date() + timedelta(days=k % 30 - 10),
                                "subject_class": None} for k, r in enumerate(requests)])


def _storage(bench: Bench, rows: _Rows) -> None:
    keys = tuple(Location.__table__.c.keys())

    def location(entity_id: str, name: str, kind: str, parent: str | None, path: str,
                 side: int | None = None) -> tuple[dict, dict]:
        own = dict.fromkeys(keys)
        own.update(id=entity_id, parent_id=parent, location_type=kind, rows=side,
                   columns=side, hierarchy=path)
        return rows.entity(id=entity_id, eclass="Location", name=name, status="Active"), own
    made = []
    for f in range(FREEZERS):
        freezer = f"FRZX{f:02d}"
        made.append(location(freezer, f"Freezer {f:02d}", "Freezer", None, f"Freezer {f:02d}"))
        for r in range(RACKS):
            rack = f"RCKX{f * RACKS + r:03d}"
            rack_path = f"Freezer {f:02d} / Rack {r}"
            made.append(location(rack, f"Rack {r}", "Rack", freezer, rack_path))
            for b in range(BOXES_PER_RACK):
                number = (f * RACKS + r) * BOXES_PER_RACK + b
                made.append(location(box_id(number), f"Box {number:05d}", "Box", rack,
                                     f"{rack_path} / Box {number:05d}", BOX_SIDE))
    _pairs(bench, [e for e, _ in made], Location.__table__, [o for _, o in made])


def _samples(bench: Bench, rows: _Rows, entities: int, connection: Connection,
             start: int) -> None:
    """Insert the samples of the chunk at ``start`` and commit."""
    sample_keys = tuple(Sample.__table__.c.keys())
    stored = stored_boxes(entities) * TUBES_PER_BOX
    today = rows.now.date()
    entity_rows, sample_rows = [], []
    for n in range(start, min(entities, start + CHUNK)):
        name, description, barcode = _text(n)
        department = department_of(bench, n)
        created = rows.now - timedelta(days=n % 365, seconds=n % 86_400)
        entity_rows.append(rows.entity(
            id=sample_id(n), eclass="Sample", name=name, description=description,
            barcode=barcode, status=STATUSES[n % 10], department_id=department,
            project_id=project_of(bench, department), created_utc=created,
            modified_utc=created,
            attributes={"conc": round(0.1 + (n % 97) / 10, 2), "batch": f"B{n // 500:05d}"}))
        own = dict.fromkeys(sample_keys)
        step = n % (EXPERIMENTS * STEPS)
        own.update(id=sample_id(n), amount=5.0 if n % 50 == 31 else 10.5 + (n * 37) % 990 / 10,
                   unit="mL", step_id=f"STPX{step:05d}",
                   experiment_id=f"EXPX{step // STEPS:05d}",
                   expiry_date=today + timedelta(days=n % 400 - 30),
                   date_taken=created.date())
        if n < stored:
            own.update(location_id=box_id(n // TUBES_PER_BOX), position=slot_of(n))
        sample_rows.append(own)
    connection.execute(insert(_E), entity_rows)
    connection.execute(insert(Sample.__table__), sample_rows)
    connection.commit()


def _events(bench: Bench, rows: _Rows, entities: int, connection: Connection,
            start: int) -> None:
    """Insert the ``Created`` events and check-in log entries of the chunk at ``start``."""
    stored = stored_boxes(entities) * TUBES_PER_BOX
    numbers = range(start, min(entities, start + CHUNK))
    connection.execute(insert(EntityEvent.__table__), [
        {"entity_id": sample_id(n), "kind": "Created", "user_id": "admin",
         "timestamp_utc": rows.now - timedelta(days=n % 365, seconds=n % 86_400),
         "data": {}} for n in numbers])
    log_rows = [{"action": "checkin", "eclass": "Sample", "entity_id": sample_id(n),
                 "location_id": box_id(n // TUBES_PER_BOX), "from_location_id": None,
                 "position": slot_of(n), "user_id": "admin", "timestamp_utc": rows.now}
                for n in numbers if n < stored]
    if log_rows:
        connection.execute(insert(StorageLogEntry.__table__), log_rows)
    connection.commit()


def _in_chunks(bench: Bench, entities: int, write: Callable[[Connection, int], None],
               what: str, log: Callable[[str], None]) -> float:
    """Run ``write(connection, start)`` for every chunk; PostgreSQL takes two writers at
    once (one per core: the server maintains indexes and runs triggers while this process
    builds the next rows), SQLite one. Returns the seconds."""
    writers = 2 if bench.backend == "postgresql" else 1
    starts = list(range(0, entities, CHUNK))
    started = time.perf_counter()

    def writer(share: list[int]) -> None:
        with bench.engine.connect() as connection:
            for start in share:
                write(connection, start)
                if (start // CHUNK + 1) % 40 == 0:
                    log(f"  [{bench.backend}] {what}: {start + CHUNK:,} "
                        f"({(start + CHUNK) / (time.perf_counter() - started):,.0f}/s)")
    with ThreadPoolExecutor(writers) as pool:
        for share in [pool.submit(writer, starts[k::writers]) for k in range(writers)]:
            share.result()
    return time.perf_counter() - started


def seed(bench: Bench, entities: int, log: Callable[[str], None]) -> dict[str, float]:
    """Write the data; returns the seconds of each part."""
    rows = _Rows(bench)
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    _organisation(bench, rows)
    _storage(bench, rows)
    seconds["organisation and storage"] = time.perf_counter() - started
    seconds["samples"] = _in_chunks(bench, entities, lambda connection, start: _samples(
        bench, rows, entities, connection, start), "samples", log)
    seconds["events and storage log"] = _in_chunks(bench, entities, lambda connection, start:
                                                   _events(bench, rows, entities, connection,
                                                           start), "events", log)
    return seconds


def reader_sample(number: int) -> int:
    """The ``number``-th sample the reader may see (their department's)."""
    return number * READER_SHARE
