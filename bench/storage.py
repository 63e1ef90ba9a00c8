"""Issue 11: storage with 100,000 stored samples (``python -m bench --storage-only``).

Seeding (Core, not measured): the samples, 1,000 full 10 × 10 boxes holding them, and for
each measured round 500 unstored samples and an empty 25 × 20 box.

1. **check-in of 500 items in one request**: ``POST /api/storage/location/{box}/checkin``
   through the Flask test client (auth, parsing, checks, slot assignment, versions, audit
   trail, events, log, answer) against the same work in SQLAlchemy Core on one connection:
   lock the box row (``FOR UPDATE`` on PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite), count
   what is stored, read the taken slots, read and lock the items, update their rows and
   versions, insert the audit events, the events and the log entries, commit. The two
   alternate round by round into boxes of their own; target ≤ 3×.
2. **the box page** of a full 10 × 10 box (``GET /storage/locations/{id}``: grid, contents,
   log, counts, rendered HTML) against the same reads in Core (location, stored count, log
   counts, contents, one log page), once without HTML and once rendering the same template
   from them; p50/p95 of interleaved runs; targets ≤ 3× and p95 < 100 ms.
"""
from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import SimpleNamespace

from flask import render_template
from sqlalchemy import bindparam, func, insert, select, update
from sqlalchemy.engine import Connection

from bench.harness import BATCH, Bench, open_bench, timed
from bench.serving import forget_search_backlog, indexer_worker
from bench.write import core_insert, core_rows
from labapp.model import (
    AuditEvent,
    Entity,
    EntityEvent,
    Location,
    Sample,
    StorageLogEntry,
)
from labapp.storage.service import StoredItem
from labapp.storage.views import BoxGrid, Slot

BOXES = 1_000  # of 10 × 10: 100,000 stored samples
BOX_SIDE = 10
TARGET_ROWS, TARGET_COLUMNS = 25, 20  # 500 slots, one round's check-in
TOPIC, TITLE = "storage", "Storage: check-in and the box page (issue 11)"
_ENTITY = Entity.__table__
_SAMPLE = Sample.__table__
_LOCATION = Location.__table__
_LOG = StorageLogEntry.__table__


@dataclass
class StorageResult:
    backend: str
    stored: int
    api_checkins: list[float] = field(default_factory=list)
    core_checkins: list[float] = field(default_factory=list)
    api_pages: list[float] = field(default_factory=list)
    core_pages: list[float] = field(default_factory=list)
    rendered_pages: list[float] = field(default_factory=list)
    seconds: float = 0.0

    @staticmethod
    def _p(values: list[float], q: float) -> float:
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    @property
    def checkin_ratio(self) -> float:
        return statistics.median(self.api_checkins) / statistics.median(self.core_checkins)

    @property
    def page_ratio(self) -> float:
        """Against the Core reads alone (no HTML)."""
        return statistics.median(self.api_pages) / statistics.median(self.core_pages)

    @property
    def rendered_ratio(self) -> float:
        """Against the Core reads plus the same template: the like-for-like page."""
        return statistics.median(self.api_pages) / statistics.median(self.rendered_pages)

    def page_p(self, q: float, api: bool = True) -> float:
        return self._p(self.api_pages if api else self.core_pages, q)


def _location_rows(bench: Bench, ids: list[str], rows: int, columns: int,
                   parent: str | None, names: Callable[[int], str]) -> tuple[list, list]:
    now = datetime.now(UTC)
    entities, locations = [], []
    for index, location_id in enumerate(ids):
        entity = dict.fromkeys(_ENTITY.c.keys())
        entity.update(id=location_id, eclass="Location", name=names(index), status="Active",
                      type="Other", user_id="admin", department_id=bench.department,
                      attributes={}, created_by="admin", modified_by="admin",
                      created_utc=now, modified_utc=now, version=1)
        location = dict.fromkeys(_LOCATION.c.keys())
        location.update(id=location_id, parent_id=parent, location_type="Box", rows=rows,
                        columns=columns, hierarchy=f"Freezer / {names(index)}")
        entities.append(entity)
        locations.append(location)
    return entities, locations


def _insert_locations(bench: Bench, rows: tuple[list, list]) -> None:
    with bench.engine.connect() as connection:
        connection.execute(insert(_ENTITY), rows[0])
        connection.execute(insert(_LOCATION), rows[1])
        connection.commit()


def seed(bench: Bench, boxes: int, rounds: int, log: Callable[[str], None]) -> None:
    """Samples in full boxes, then per round 500 loose samples and an empty target box."""
    _insert_locations(bench, _location_rows(bench, ["FRZ"], None, None, None,
                                            lambda _: "Freezer"))
    per_box = BOX_SIDE * BOX_SIDE
    for start in range(0, boxes * per_box, BATCH):
        core_insert(bench.engine, core_rows(bench, range(start, start + BATCH)))
    box_ids = [f"BOX{n:05d}" for n in range(boxes)]
    _insert_locations(bench, _location_rows(bench, box_ids, BOX_SIDE, BOX_SIDE, "FRZ",
                                            lambda n: f"Box {n}"))
    placements = [{"key": f"SAMX{n:06d}", "loc": box_ids[n // per_box],
                   "pos": f"{'ABCDEFGHIJ'[(n % per_box) // BOX_SIDE]}{n % BOX_SIDE + 1}"}
                  for n in range(boxes * per_box)]
    with bench.engine.connect() as connection:
        connection.execute(update(_SAMPLE).where(_SAMPLE.c.id == bindparam("key"))
                           .values(location_id=bindparam("loc"), position=bindparam("pos")),
                           placements)
        connection.commit()
    loose = boxes * per_box
    for start in range(loose, loose + 2 * rounds * BATCH, BATCH):
        core_insert(bench.engine, core_rows(bench, range(start, start + BATCH)))
    targets = [f"TGT{n:04d}" for n in range(2 * rounds)]
    _insert_locations(bench, _location_rows(bench, targets, TARGET_ROWS, TARGET_COLUMNS,
                                            "FRZ", lambda n: f"Target {n}"))
    if bench.backend == "postgresql":
        with bench.engine.connect() as connection:
            connection.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql(
                "ANALYZE")
    log(f"  [{bench.backend}] seeded {loose:,} stored samples in {boxes:,} boxes")


def _round_ids(round_number: int, path: int, stored: int) -> tuple[str, list[str]]:
    first = stored + (2 * round_number + path) * BATCH
    return (f"TGT{2 * round_number + path:04d}",
            [f"SAMX{n:06d}" for n in range(first, first + BATCH)])


def api_checkin(bench: Bench, box: str, ids: list[str]) -> None:
    body = json.dumps([{"eClass": "Sample", "id": item} for item in ids]).encode()
    response = bench.client.post(f"/api/storage/location/{box}/checkin", data=body,
                                 content_type="application/json",
                                 headers=bench.admin_headers)
    if response.status_code != 200 or response.get_json()["stored"] != len(ids):
        raise RuntimeError(f"check-in failed: {response.get_data(as_text=True)[:300]}")


def _for_writing(connection: Connection) -> Connection:
    """The connection beginning its transactions as the app's units of work do (``BEGIN
    IMMEDIATE`` on SQLite, see labapp/db.py)."""
    return connection.execution_options(labapp_write=True)


def core_checkin(bench: Bench, box: str, ids: list[str]) -> None:
    """The same work as the API's check-in, in Core."""
    now = datetime.now(UTC)
    with bench.engine.connect() as plain:
        connection = _for_writing(plain)
        connection.execute(select(_LOCATION.c.rows, _LOCATION.c.columns)
                           .where(_LOCATION.c.id == box).with_for_update())
        stored = connection.scalar(select(func.count()).select_from(_SAMPLE).where(
            _SAMPLE.c.location_id == box, _SAMPLE.c.plate_id.is_(None)))
        taken = set(connection.scalars(select(_SAMPLE.c.position).where(
            _SAMPLE.c.location_id == box, _SAMPLE.c.position.is_not(None))))
        items = connection.execute(select(_SAMPLE.c.id, _SAMPLE.c.location_id,
                                          _ENTITY.c.version, _ENTITY.c.department_id)
                                   .join_from(_SAMPLE, _ENTITY, _SAMPLE.c.id == _ENTITY.c.id)
                                   .where(_SAMPLE.c.id.in_(ids)).order_by(_SAMPLE.c.id)
                                   .with_for_update()).all()
        assert stored + len(items) <= TARGET_ROWS * TARGET_COLUMNS
        free = (f"{chr(65 + r)}{c + 1}" for r in range(TARGET_ROWS)
                for c in range(TARGET_COLUMNS) if f"{chr(65 + r)}{c + 1}" not in taken)
        slots = {row.id: next(free) for row in items}
        connection.execute(update(_SAMPLE).where(_SAMPLE.c.id == bindparam("key"))
                           .values(location_id=box, position=bindparam("pos")),
                           [{"key": row.id, "pos": slots[row.id]} for row in items])
        connection.execute(update(_ENTITY).where(_ENTITY.c.id == bindparam("key"))
                           .values(version=bindparam("ver"), modified_by="admin",
                                   modified_utc=now),
                           [{"key": row.id, "ver": row.version + 1} for row in items])
        connection.execute(insert(AuditEvent.__table__), [
            {"entity_id": row.id, "action": "update", "version": row.version + 1,
             "user_id": "admin", "timestamp_utc": now,
             "changes": {"locationID": {"old": None, "new": box},
                         "position": {"old": None, "new": slots[row.id]}}} for row in items])
        connection.execute(insert(EntityEvent.__table__), [
            {"entity_id": row.id, "kind": "CheckedIn", "user_id": "admin", "timestamp_utc": now,
             "data": {"locationID": box, "position": slots[row.id]}} for row in items])
        connection.execute(insert(_LOG), [
            {"action": "checkin", "eclass": "Sample", "entity_id": row.id, "location_id": box,
             "from_location_id": None, "position": slots[row.id], "user_id": "admin",
             "timestamp_utc": now} for row in items])
        connection.commit()


TAKEN_CELL = 'class="slot slot-taken'


def api_page(bench: Bench, box: str) -> None:
    response = bench.client.get(f"/storage/locations/{box}", headers=bench.admin_headers)
    if (response.status_code != 200
            or response.get_data(as_text=True).count(TAKEN_CELL) != 100):
        raise RuntimeError(f"box page failed: {response.status_code}")


def _core_reads(connection: Connection, box: str) -> dict:
    """Every read of the box page, in Core, as plain dicts."""
    location = dict(connection.execute(select(_ENTITY, _LOCATION).join_from(
        _ENTITY, _LOCATION, _ENTITY.c.id == _LOCATION.c.id)
        .where(_LOCATION.c.id == box)).mappings().one())
    parents = [dict(row) for row in connection.execute(
        select(_ENTITY.c.id, _ENTITY.c.name).where(_ENTITY.c.id == location["parent_id"]))
        .mappings()]
    stored = connection.scalar(select(func.count()).select_from(_SAMPLE).where(
        _SAMPLE.c.location_id == box, _SAMPLE.c.plate_id.is_(None)))
    counts = dict(connection.execute(select(_LOG.c.action, func.count()).where(
        _LOG.c.location_id == box).group_by(_LOG.c.action)).all())
    contents = [dict(row) for row in connection.execute(
        select(_ENTITY.c.id, _ENTITY.c.name, _ENTITY.c.barcode, _SAMPLE.c.position)
        .join_from(_SAMPLE, _ENTITY, _SAMPLE.c.id == _ENTITY.c.id)
        .where(_SAMPLE.c.location_id == box, _SAMPLE.c.plate_id.is_(None))
        .order_by(_SAMPLE.c.position, _SAMPLE.c.id)).mappings()]
    log = [dict(row) for row in connection.execute(
        select(_LOG).where(_LOG.c.location_id == box).order_by(_LOG.c.id.desc())
        .limit(50)).mappings()]
    occupied = set(connection.scalars(select(_SAMPLE.c.position).where(
        _SAMPLE.c.location_id == box, _SAMPLE.c.plate_id.is_(None),
        _SAMPLE.c.position.is_not(None))))
    assert len(contents) == 100 and stored == 100 == len(occupied)
    return {"location": location, "parents": parents, "stored": stored, "counts": counts,
            "contents": contents, "log": log, "occupied": occupied}


def core_page(bench: Bench, box: str) -> None:
    """The reads of the box page in Core, with the rows turned into dicts (no HTML)."""
    with bench.engine.connect() as connection:
        _core_reads(connection, box)


def core_page_rendered(bench: Bench, box: str) -> None:
    """The Core reads, then the same template rendered from them: the page's whole work
    without labapp's services, visibility predicates and ORM."""
    with bench.engine.connect() as connection:
        data = _core_reads(connection, box)
    row = data["location"]
    capacity = row["rows"] * row["columns"]
    location = {"id": row["id"], "name": row["name"], "hierarchy": row["hierarchy"],
                "locationType": row["location_type"], "rows": row["rows"],
                "columns": row["columns"], "stored": data["stored"],
                "available": capacity - data["stored"],
                "checkin": data["counts"].get("checkin", 0),
                "checkout": data["counts"].get("checkout", 0)}
    items = [StoredItem(item["id"], "Sample", item["name"], item["barcode"], item["position"])
             for item in data["contents"]]
    by_position = {item.position: item for item in items}
    cells = []
    for r in range(row["rows"]):
        letter = chr(65 + r)
        positions = [f"{letter}{c + 1}" for c in range(row["columns"])]
        cells.append((letter, [
            Slot(position, "taken" if position in by_position else
                 "occupied" if position in data["occupied"] else "free",
                 by_position.get(position)) for position in positions]))
    grid = BoxGrid(cells, len(data["occupied"]), 0, None)
    log = [{"timestampUtc": entry["timestamp_utc"], "userID": entry["user_id"],
            "action": entry["action"], "eClass": entry["eclass"],
            "entityID": entry["entity_id"], "position": entry["position"]}
           for entry in data["log"]]
    with bench.app.test_request_context(f"/storage/locations/{box}"):
        html = render_template(
            "storage/location.html", location=location, items=items, grid=grid,
            ancestors=[SimpleNamespace(**parent) for parent in data["parents"]], children=[],
            within={row["id"]: data["stored"]}, log_entries=log, log_total=len(log),
            log_skip=0, log_rows=50, can_write=True, error=None, confirm=None)
    assert html.count(TAKEN_CELL) == 100


def run(backend: str, *, boxes: int = BOXES, rounds: int = 5, page_runs: int = 50,
        log: Callable[[str], None] = print) -> StorageResult:
    started = time.perf_counter()
    with open_bench(backend) as bench:
        seed(bench, boxes, rounds, log)
        forget_search_backlog(bench)
        with indexer_worker(bench):  # as `make run` serves: indexing off the request
            return _measured(bench, backend, boxes, rounds, page_runs, log, started)


def _measured(bench: Bench, backend: str, boxes: int, rounds: int, page_runs: int,
              log: Callable[[str], None], started: float) -> StorageResult:
    stored = boxes * BOX_SIDE * BOX_SIDE
    result = StorageResult(backend, stored)
    for round_number in range(rounds):
        box, ids = _round_ids(round_number, 0, stored)
        result.api_checkins.append(
            timed(lambda box=box, ids=ids: api_checkin(bench, box, ids))[0])
        box, ids = _round_ids(round_number, 1, stored)
        result.core_checkins.append(
            timed(lambda box=box, ids=ids: core_checkin(bench, box, ids))[0])
    log(f"  [{backend}] check-in of {BATCH}: API "
        f"{statistics.median(result.api_checkins) * 1000:.0f} ms, Core "
        f"{statistics.median(result.core_checkins) * 1000:.0f} ms")
    page_box = f"BOX{boxes // 2:05d}"
    for _ in range(3):  # warm-up
        api_page(bench, page_box)
        core_page(bench, page_box)
        core_page_rendered(bench, page_box)
    for _ in range(page_runs):
        result.api_pages.append(timed(lambda: api_page(bench, page_box))[0])
        result.core_pages.append(timed(lambda: core_page(bench, page_box))[0])
        result.rendered_pages.append(
            timed(lambda: core_page_rendered(bench, page_box))[0])
    result.seconds = time.perf_counter() - started
    return result


def _verdict(ok: bool) -> str:
    return "**PASS**" if ok else "**FAIL**"


def summary(results: list[StorageResult]) -> list[str]:
    """Issue 11's targets: check-in and box page against Core, one line per database each."""
    lines = []
    for r in results:
        lines.append(
            f"{r.backend:>10}: check-in 500 API {statistics.median(r.api_checkins) * 1000:.0f} ms"
            f" vs Core {statistics.median(r.core_checkins) * 1000:.0f} ms = "
            f"{r.checkin_ratio:.2f}x (≤3x) {'PASS' if r.checkin_ratio <= 3 else 'FAIL'}")
        lines.append(
            f"{r.backend:>10}: box page p50 {r.page_p(.5) * 1000:.1f} ms, p95 "
            f"{r.page_p(.95) * 1000:.1f} ms (<100 ms) "
            f"{'PASS' if r.page_p(.95) < .1 else 'FAIL'}; Core p50 "
            f"{r.page_p(.5, False) * 1000:.1f} ms = {r.page_ratio:.2f}x (≤3x) "
            f"{'PASS' if r.page_ratio <= 3 else 'FAIL'}; Core + same template p50 "
            f"{statistics.median(r.rendered_pages) * 1000:.1f} ms = {r.rendered_ratio:.2f}x "
            f"{'PASS' if r.rendered_ratio <= 3 else 'FAIL'}")
    return lines


def render(results: list[StorageResult], facts: list[str]) -> str:
    rows = ["| Backend | stored samples | check-in 500: API / Core (median) | ratio (≤3×) | "
            "box page API p50 / p95 (p95 < 100 ms) | box page Core reads p50 | ratio (≤3×) | "
            "Core reads + same template p50 | ratio (≤3×) |",
            "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        rows.append(
            f"| {r.backend} | {r.stored:,} | "
            f"{statistics.median(r.api_checkins) * 1000:,.0f} ms / "
            f"{statistics.median(r.core_checkins) * 1000:,.0f} ms "
            f"({len(r.api_checkins)} rounds) | {r.checkin_ratio:.2f}× "
            f"{_verdict(r.checkin_ratio <= 3)} | {r.page_p(.5) * 1000:.1f} / "
            f"{r.page_p(.95) * 1000:.1f} ms {_verdict(r.page_p(.95) < .1)} | "
            f"{r.page_p(.5, False) * 1000:.1f} ms | {r.page_ratio:.2f}× "
            f"{_verdict(r.page_ratio <= 3)} | "
            f"{statistics.median(r.rendered_pages) * 1000:.1f} ms | {r.rendered_ratio:.2f}× "
            f"{_verdict(r.rendered_ratio <= 3)} |")
    return "\n".join([*facts, "", *rows, ""]) + "\n"
