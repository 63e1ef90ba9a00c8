"""Eight clients write at once while a ninth follows the feed: the follower is told of every
change exactly once, in the order of the log, and the log holds one change for each version
the audit trail records — on PostgreSQL too, where transactions commit in any order."""
from __future__ import annotations

import threading
from typing import Any

import pytest
from sqlalchemy import select, text

from labapp.db import db
from labapp.model import AuditEvent, ChangeLogEntry
from tests.changefeed.conftest import Lab, signed_in
from tests.conftest import ADMIN_PASSWORD
from tests.databases import BACKEND
from tests.entities.conftest import body_of

WRITERS = 8
ROUNDS = 6
JOIN_TIMEOUT_S = 120


def _write(lab: Lab, number: int, start: threading.Barrier, failures: list[str]) -> None:
    """Create two samples, then change them round after round (name, then department)."""
    api = signed_in(lab.app, "admin", ADMIN_PASSWORD)
    start.wait(timeout=JOIN_TIMEOUT_S)
    created = api.post("/api/entity", json={"entities": [
        {"eClass": "Sample", "name": f"w{number}-{item}", "departmentID": "DEP-X"}
        for item in range(2)]})
    if created.status_code != 201:
        failures.append(f"writer {number}: {created.get_data(as_text=True)}")
        return
    ids = [entity["id"] for entity in created.get_json()["entities"]]
    for round_number in range(ROUNDS):
        department = ("DEP-X", "DEP-Y")[round_number % 2]
        response = api.post("/api/entity", json={"entities": [
            {"eClass": "Sample", "id": entity_id, "name": f"w{number} r{round_number}",
             "departmentID": department} for entity_id in ids]})
        if response.status_code != 200:
            failures.append(f"writer {number}: {response.get_data(as_text=True)}")
            return


def _follow(lab: Lab, after: int, writers_done: threading.Event,
            seen: list[dict[str, Any]]) -> None:
    """Follow the feed with long polls until the writers are done and a page comes empty."""
    api = signed_in(lab.app, "admin", ADMIN_PASSWORD)
    cursor = str(after)
    while True:
        done = writers_done.is_set()
        page = body_of(api.get("/api/changes", query_string={
            "after": cursor, "$top": "7", "wait": "0" if done else "1"}), 200)
        seen += page["data"]
        cursor = page["next"]
        if done and not page["data"]:
            return


def test_a_follower_sees_every_change_of_eight_writers_once_in_order(lab: Lab) -> None:
    start = lab.cursor()
    barrier = threading.Barrier(WRITERS)
    failures: list[str] = []
    seen: list[dict[str, Any]] = []
    writers_done = threading.Event()
    writers = [threading.Thread(target=_write, args=(lab, number, barrier, failures))
               for number in range(WRITERS)]
    follower = threading.Thread(target=_follow, args=(lab, start, writers_done, seen))
    follower.start()
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(timeout=JOIN_TIMEOUT_S)
    writers_done.set()
    follower.join(timeout=JOIN_TIMEOUT_S)

    assert not failures and not follower.is_alive()
    logged = lab.changes(start)
    assert [change["seq"] for change in seen] == [change["seq"] for change in logged]
    seqs = [change["seq"] for change in logged]
    assert seqs == sorted(set(seqs))
    assert len(logged) == WRITERS * 2 * (1 + ROUNDS)
    with lab.app.app_context():
        ids = sorted({change["entityID"] for change in logged})
        audited = sorted((entity_id, version) for entity_id, version in db.session.execute(
            select(AuditEvent.entity_id, AuditEvent.version)
            .where(AuditEvent.entity_id.in_(ids))))
        stored = db.session.execute(select(ChangeLogEntry.seq, ChangeLogEntry.entity_id,
                                           ChangeLogEntry.version)
                                    .where(ChangeLogEntry.seq > start)
                                    .order_by(ChangeLogEntry.seq)).all()
        db.session.remove()
    assert sorted((change["entityID"], change["version"]) for change in logged) == audited
    assert [(change["seq"], change["entityID"], change["version"]) for change in logged] == [
        tuple(row) for row in stored]
    for entity_id in ids:
        versions = [change["version"] for change in logged if change["entityID"] == entity_id]
        assert versions == list(range(1, ROUNDS + 2))


@pytest.mark.skipif(BACKEND != "postgresql", reason="SQLite's writers take turns: a second "
                    "one waits for the first to commit")
def test_a_transaction_that_commits_late_is_numbered_after_the_one_that_committed(
        lab: Lab) -> None:
    """T1 changes an entity first and commits last: its change comes after T2's in the
    log, never before a number a reader has already been given."""
    start = lab.cursor()
    bump = text("UPDATE entity SET version = version + 1 WHERE id = :id")
    with lab.app.app_context():
        engine = db.engine
    with engine.connect() as first, engine.connect() as second:
        first.execute(bump, {"id": "DEP-X"})
        second.execute(bump, {"id": "DEP-Y"})
        second.commit()
        told_before = lab.changes(start)
        first.commit()
    told_after = lab.changes(start)

    assert [change["entityID"] for change in told_before] == ["DEP-Y"]
    assert [change["entityID"] for change in told_after] == ["DEP-Y", "DEP-X"]
    assert told_after[0] == told_before[0] and told_after[1]["seq"] > told_after[0]["seq"]
