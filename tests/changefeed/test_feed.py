"""``GET /api/changes``: every kind of change, in commit order, told to whoever may read the
entity; cursors, pages, long polling, retention (410) and bad input."""
from __future__ import annotations

import re
import threading
from datetime import timedelta
from typing import Any

from sqlalchemy import func, select, update

from labapp.changefeed import retention
from labapp.db import db
from labapp.model import AuditEvent, ChangeLogEntry
from labapp.model.types import utc_now
from tests.changefeed.conftest import Lab, position
from tests.contracts.problem import assert_problem
from tests.entities.conftest import body_of
from tests.files.conftest import created, upload
from tests.storage.conftest import check_in, make_locations


def _kinds(changes: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    return [(change["entityID"], change["kind"], change["version"]) for change in changes]


def test_without_a_cursor_the_feed_starts_now(lab: Lab) -> None:
    lab.save({"eClass": "Sample", "name": "before", "departmentID": "DEP-X"})
    page = body_of(lab.admin.get("/api/changes"), 200)
    assert page["data"] == [] and re.fullmatch(r"[0-9]+-[0-9a-f]{8}", page["next"])

    sample, = lab.save({"eClass": "Sample", "name": "after", "departmentID": "DEP-X"})

    assert _kinds(lab.changes(position(page["next"]))) == [(sample["id"], "create", 1)]


def test_samples_carried_by_their_plate_are_told_with_their_new_place(lab: Lab) -> None:
    """A plate checked in, moved by a check-in elsewhere, moved by the entity batch and
    checked out: each time its samples get a version, an audit event of their locationID
    and a change, so a mirror following Samples knows where they are."""
    first, second, third = make_locations(lab.admin, *({"name": name, "departmentID": "DEP-X"}
                                                        for name in ("One", "Two", "Three")))
    plate, = lab.save({"eClass": "Plate", "name": "P1", "departmentID": "DEP-X"})
    on_plate = lab.save(*({"eClass": "Sample", "name": f"on P1 {number}",
                           "departmentID": "DEP-X", "plateID": plate["id"]}
                          for number in (1, 2)))
    start = lab.cursor()
    check_in(lab.admin, first["id"], [{"eClass": "Plate", "id": plate["id"]}])
    check_in(lab.admin, second["id"], [{"eClass": "Plate", "id": plate["id"]}])
    lab.save({"eClass": "Plate", "id": plate["id"], "locationID": third["id"]})
    body_of(lab.admin.post("/api/storage/location/checkout",
                           json=[{"eClass": "Plate", "id": plate["id"]}]), 200)

    changes = lab.changes(start, **{"$expand": "entity"})

    for sample in on_plate:
        told = [(change["kind"], change["version"]) for change in changes
                if change["entityID"] == sample["id"]]
        assert told == [("update", 2), ("update", 3), ("update", 4), ("update", 5)]
    plate_kinds = [change["kind"] for change in changes if change["entityID"] == plate["id"]]
    assert plate_kinds == ["checkin", "checkin", "checkin", "checkout"]
    with lab.app.app_context():
        audits = db.session.execute(
            select(AuditEvent.version, AuditEvent.changes)
            .where(AuditEvent.entity_id == on_plate[0]["id"], AuditEvent.version > 1)
            .order_by(AuditEvent.version)).all()
        db.session.remove()
    assert [(version, changes["locationID"]["new"]) for version, changes in audits] == [
        (2, first["id"]), (3, second["id"]), (4, third["id"]), (5, None)]
    first_sample = on_plate[0]["id"]
    assert body_of(lab.admin.get(f"/api/entity/Sample/{first_sample}"), 200)[
        "locationID"] is None


def test_every_kind_of_change_in_commit_order(lab: Lab) -> None:
    start = lab.cursor()
    sample, = lab.save({"eClass": "Sample", "name": "s1", "departmentID": "DEP-X"})
    lab.save({"id": sample["id"], "eClass": "Sample", "name": "s1 renamed"})
    lab.save({"id": sample["id"], "eClass": "Sample", "status": "InProgress"})
    box, shelf = make_locations(lab.admin, {"name": "Box", "departmentID": "DEP-X"},
                                {"name": "Shelf", "departmentID": "DEP-X"})
    check_in(lab.admin, box["id"], [{"eClass": "Sample", "id": sample["id"]}])
    body_of(lab.admin.post("/api/storage/location/checkout",
                           json=[{"eClass": "Sample", "id": sample["id"]}]), 200)
    lab.save({"id": box["id"], "eClass": "Location", "parentID": shelf["id"]})
    attached = created(upload(lab.admin, b"raw data", "run.csv", subjectID=sample["id"]))
    gone, = lab.save({"eClass": "Department", "name": "Short-lived"})
    body_of(lab.admin.delete(f"/api/department/{gone['id']}"), 204)

    changes = lab.changes(start)

    assert _kinds(changes) == [
        (sample["id"], "create", 1), (sample["id"], "update", 2), (sample["id"], "update", 3),
        (box["id"], "create", 1), (shelf["id"], "create", 1),
        (sample["id"], "checkin", 4), (sample["id"], "checkout", 5), (box["id"], "move", 2),
        (attached["id"], "create", 1), (gone["id"], "create", 1), (gone["id"], "delete", 1)]
    seqs = [change["seq"] for change in changes]
    assert seqs == sorted(set(seqs)) and seqs[0] > start
    assert {change["actorID"] for change in changes} == {"admin"}
    assert {change["eClass"] for change in changes} == {"Sample", "Location", "File",
                                                        "Department"}
    assert all(change["createdUtc"].endswith("Z") for change in changes)


def test_the_entity_comes_when_asked_for_as_it_is_now(lab: Lab) -> None:
    start = lab.cursor()
    sample, = lab.save({"eClass": "Sample", "name": "first", "departmentID": "DEP-X"})
    lab.save({"id": sample["id"], "eClass": "Sample", "name": "second"})

    plain = lab.changes(start)
    expanded = lab.changes(start, **{"$expand": "entity"})

    assert all("entity" not in change for change in plain)
    assert [change["entity"]["name"] for change in expanded] == ["second", "second"]
    assert expanded[0]["entity"]["id"] == sample["id"]


def test_a_caller_is_told_only_of_what_they_may_read(lab: Lab) -> None:
    start = lab.cursor()
    mine, theirs = lab.save({"eClass": "Sample", "name": "x", "departmentID": "DEP-X"},
                            {"eClass": "Sample", "name": "y", "departmentID": "DEP-Y"})

    told = {change["entityID"] for change in lab.changes(start, lab.alice)}

    assert mine["id"] in told and theirs["id"] not in told
    assert {mine["id"], theirs["id"]} <= {change["entityID"] for change in lab.changes(start)}


def test_an_entity_taken_out_of_sight_is_one_hidden_change(lab: Lab) -> None:
    sample, = lab.save({"eClass": "Sample", "name": "roams", "departmentID": "DEP-X"})
    start = lab.cursor()
    lab.save({"id": sample["id"], "eClass": "Sample", "departmentID": "DEP-Y"})
    lab.save({"id": sample["id"], "eClass": "Sample", "name": "unseen rename"})
    lab.save({"id": sample["id"], "eClass": "Sample", "departmentID": "DEP-X"})

    told = lab.changes(start, lab.alice, **{"$expand": "entity"})

    assert _kinds(told) == [(sample["id"], "hidden", 2), (sample["id"], "update", 4)]
    assert "entity" not in told[0]
    assert told[1]["entity"]["name"] == "unseen rename"
    assert [change["kind"] for change in lab.changes(start)] == ["update"] * 3


def test_a_deleted_project_is_told_to_the_members_of_its_department(lab: Lab) -> None:
    """Alice reads Department X: she is told of a project of X made and deleted (the
    delete once named no department, and only ADMIN was told), never of one of Y."""
    start = lab.cursor()
    ours, theirs = lab.save({"eClass": "Project", "name": "Ours", "departmentID": "DEP-X"},
                            {"eClass": "Project", "name": "Theirs", "departmentID": "DEP-Y"})
    for project in (ours, theirs):
        body_of(lab.admin.delete(f"/api/project/{project['id']}"), 204)

    told = lab.changes(start, lab.alice)

    assert [(change["entityID"], change["kind"]) for change in told] == [
        (ours["id"], "create"), (ours["id"], "delete")]
    assert [(change["entityID"], change["kind"]) for change in lab.changes(start)] == [
        (ours["id"], "create"), (theirs["id"], "create"), (ours["id"], "delete"),
        (theirs["id"], "delete")]


def test_pages_walk_every_change_once_in_order(lab: Lab) -> None:
    start = lab.cursor()
    samples = lab.save(*({"eClass": "Sample", "name": f"p{number}", "departmentID": "DEP-X"}
                         for number in range(7)))
    cursor, seen, sizes = start, [], []
    while True:
        page = body_of(lab.alice.get("/api/changes", query_string={
            "after": str(cursor), "$top": "3"}), 200)
        if not page["data"]:
            break
        sizes.append(len(page["data"]))
        seen += page["data"]
        cursor = position(page["next"])
        assert cursor == page["data"][-1]["seq"]

    assert sizes == [3, 3, 1]
    assert [change["entityID"] for change in seen] == [sample["id"] for sample in samples]
    assert cursor == lab.cursor()


def test_a_page_of_nothing_readable_moves_the_cursor_on(lab: Lab) -> None:
    start = lab.cursor()
    lab.save(*({"eClass": "Sample", "name": f"y{number}", "departmentID": "DEP-Y"}
               for number in range(3)))

    page = body_of(lab.alice.get("/api/changes", query_string={"after": str(start)}), 200)

    assert page["data"] == [] and position(page["next"]) == lab.cursor() > start


def test_a_cursor_the_log_does_not_serve_is_410(lab: Lab) -> None:
    lab.save({"eClass": "Sample", "name": "old", "departmentID": "DEP-X"})
    latest = lab.cursor()

    problem = assert_problem(lab.alice.get("/api/changes", query_string={
        "after": str(latest + 1)}), 410, "cursor_expired")

    assert str(latest) in problem["detail"]


def test_retention_removes_old_changes_and_old_cursors_get_410(lab: Lab) -> None:
    lab.save(*({"eClass": "Sample", "name": f"r{number}", "departmentID": "DEP-X"}
               for number in range(4)))
    latest = lab.cursor()
    with lab.app.app_context():
        with db.session.begin():
            db.session.execute(update(ChangeLogEntry).values(
                created_utc=utc_now() - timedelta(days=100)))
        removed = retention.remove_expired(90)
        left = db.session.scalars(select(ChangeLogEntry.seq)).all()
        db.session.remove()

    assert removed > 0 and left == [latest]  # the newest change stays: numbers go on from it
    assert_problem(lab.alice.get("/api/changes", query_string={"after": "0"}), 410,
                   "cursor_expired")
    assert [change["seq"] for change in lab.changes(latest - 1, lab.alice)] == [latest]
    sample, = lab.save({"eClass": "Sample", "name": "new", "departmentID": "DEP-X"})
    assert [(change["seq"], change["entityID"]) for change in lab.changes(latest)] == [
        (latest + 1, sample["id"])]


def test_retention_keeps_what_is_younger(lab: Lab) -> None:
    start = lab.cursor()
    lab.save({"eClass": "Sample", "name": "young", "departmentID": "DEP-X"})
    with lab.app.app_context():
        retention.remove_expired(90)
        db.session.remove()
    assert len(lab.changes(start)) == 1


def test_a_long_poll_answers_when_a_change_comes(lab: Lab) -> None:
    start = lab.cursor()
    answers: list[Any] = []
    follower = threading.Thread(target=lambda: answers.append(lab.alice.get(
        "/api/changes", query_string={"after": str(start), "wait": "30"})))
    follower.start()
    sample, = lab.save({"eClass": "Sample", "name": "awaited", "departmentID": "DEP-X"})
    follower.join(timeout=60)

    assert not follower.is_alive()
    page = body_of(answers[0], 200)
    assert _kinds(page["data"]) == [(sample["id"], "create", 1)]


def test_a_long_poll_with_nothing_new_ends_empty_at_its_wait(lab: Lab) -> None:
    start = lab.cursor()

    page = body_of(lab.alice.get("/api/changes", query_string={
        "after": str(start), "wait": "1"}), 200)

    assert page["data"] == [] and position(page["next"]) == start


def test_bad_input_is_400_and_strangers_401(lab: Lab) -> None:
    for query in ({"after": "abc"}, {"after": "-1"}, {"after": ""}, {"after": "1\x00"},
                  {"after": "9" * 40}, {"after": "1-zzzzzzzz"}, {"after": "1-"},
                  {"after": "1-0123456789"}, {"after": "0", "$top": "0"},
                  {"after": "0", "$top": "501"}, {"after": "0", "$expand": "files"},
                  {"after": "0", "wait": "-1"}, {"after": "0", "wait": "x" * 10_000}):
        response = lab.alice.get("/api/changes", query_string=query)
        assert response.status_code == 400, (query, response.get_json())
    assert_problem(lab.app.test_client().get("/api/changes?after=0"), 401,
                   "not_authenticated")


def test_every_change_of_the_log_matches_one_audit_record(lab: Lab) -> None:
    start = lab.cursor()
    samples = lab.save(*({"eClass": "Sample", "name": f"a{number}", "departmentID": "DEP-X"}
                         for number in range(5)))
    lab.save(*({"id": sample["id"], "eClass": "Sample", "name": "edited"}
               for sample in samples))
    ids = [sample["id"] for sample in samples]

    told = sorted((change["entityID"], change["version"]) for change in lab.changes(start))
    with lab.app.app_context():
        audited = sorted((entity_id, version) for entity_id, version in db.session.execute(
            select(AuditEvent.entity_id, AuditEvent.version)
            .where(AuditEvent.entity_id.in_(ids))))
        unnumbered = db.session.scalar(select(func.count()).select_from(ChangeLogEntry)
                                       .where(ChangeLogEntry.seq.is_(None)))
        db.session.remove()

    assert told == audited and unnumbered == 0


def test_a_cursor_expires_when_the_callers_access_changes(lab: Lab) -> None:
    """A grant brings entities into sight with no change of their own (and taking it away
    takes them out of sight): the client must read the current state again."""
    given = body_of(lab.alice.get("/api/changes"), 200)["next"]
    body_of(lab.admin.post("/api/department/DEP-Y/access", json={
        "accessType": "Read", "userID": "alice"}), 201)

    problem = assert_problem(lab.alice.get("/api/changes", query_string={"after": given}),
                             410, "cursor_expired")
    renewed = body_of(lab.alice.get("/api/changes"), 200)["next"]
    body_of(lab.alice.get("/api/changes", query_string={"after": renewed}), 200)
    body_of(lab.admin.delete("/api/department/DEP-Y/access/user/alice"), 204)
    assert_problem(lab.alice.get("/api/changes", query_string={"after": renewed}), 410,
                   "cursor_expired")

    assert "changed" in problem["detail"]
    assert position(renewed) == position(given)
