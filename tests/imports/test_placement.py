"""Where imported samples go (issue 32 §2, §4; issue 33 §2): the placement rule of check-in
and the entity batch, decided in the dry run exactly as the commit decides it, told in words,
never naming an item the importer may not see."""
from __future__ import annotations

import csv
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from flask import Flask
from flask.testing import FlaskCliRunner
from sqlalchemy import select

from labapp.db import db, transaction
from labapp.entities.service import save_batch
from labapp.errors import AppError
from labapp.imports import jobs
from labapp.imports.engine import commit_import, plan_import
from labapp.imports.mapping import auto_map
from labapp.imports.spreadsheets import open_table
from labapp.model import Sample
from labapp.model.registry import existing_class
from labapp.storage.allocation import describe
from labapp.storage.checkin import RefusedPlacement, check_in
from tests.conftest import ApiClient
from tests.entities.conftest import Grants, save
from tests.imports.conftest import Importer, actor_of, errors, outcomes
from tests.imports.uploading import job_of, run_queued, upload
from tests.storage.conftest import body_of, make_items, make_locations


def _placed(app: Flask) -> dict[str, tuple[str | None, str | None]]:
    with app.app_context():
        return {name: (location, position) for name, location, position in db.session.execute(
            select(Sample.name, Sample.location_id, Sample.position))}


@pytest.fixture
def box3(admin: ApiClient) -> dict[str, Any]:
    """Box 3, 2 × 2, with "Serum 1" in A1."""
    made, = make_locations(admin, {"name": "Box 3", "rows": 2, "columns": 2})
    save(admin, {"eClass": "Sample", "name": "Serum 1", "locationID": made["id"],
                 "position": "A1"})
    return made


def test_one_collision_is_one_refusal_through_check_in_a_batch_and_an_import(
        app: Flask, admin: ApiClient, importer: Importer, box3: dict[str, Any],
        write_csv: Callable[..., Path]) -> None:
    free, = make_items(admin, "Sample", 1, name="Free")
    box = box3["id"]
    wanted = {"eClass": "Sample", "id": free, "position": "A1"}
    by_checkin = body_of(admin.post(f"/api/storage/location/{box}/checkin", json=[wanted]), 409)
    by_batch = body_of(admin.post("/api/entity", json={"entities": [{**wanted,
                                                                     "locationID": box}]}), 409)
    assert (by_checkin["code"], by_checkin["detail"]) == (
        "slot_taken", f"[0]: slot A1 of location {box} is taken.")
    assert (by_batch["code"], by_batch["detail"]) == (
        "slot_taken", f"entities[0]: slot A1 of location {box} is taken.")
    refusals = []
    with app.app_context():
        for call in (lambda: check_in(actor_of("admin"), box, [wanted]),
                     lambda: save_batch(actor_of("admin"), [{**wanted, "locationID": box}])):
            with pytest.raises(RefusedPlacement) as refused, transaction():
                call()
            refusals.append(refused.value.refusal)
    assert refusals[0] == refusals[1]
    assert (refusals[0].reason, refusals[0].slot, refusals[0].location_id) == ("slot_taken",
                                                                              "A1", box)
    plan = importer.plan(write_csv(f"ID,Location,Slot\n{free},Box 3,A1\n"))
    assert errors(plan) == {2: [("Slot", "slot A1 of Box 3 is taken by Serum 1")]}
    assert describe(refusals[0], "Box 3", "Serum 1") == errors(plan)[2][0][1]


def test_a_hidden_occupant_is_occupied_in_the_dry_run_its_files_and_the_cli(
        app: Flask, admin: ApiClient, member: Callable[..., ApiClient],
        department: Callable[..., str], grant: Grants, runner: FlaskCliRunner,
        importer: Importer, write_csv: Callable[..., Path]) -> None:
    shared, hidden = department("Shared"), department("Hidden")
    alice = member("alice", department_id=shared)
    grant.department(shared, "Write", user="alice")
    box, = make_locations(admin, {"name": "Box 3", "rows": 2, "columns": 2,
                                  "departmentID": shared})
    secret, = save(admin, {"eClass": "Sample", "name": "Secret serum", "departmentID": hidden,
                           "locationID": box["id"], "position": "A2"})
    text = "Name,Location,Slot\nMine,Box 3,A2\n"
    started = upload(alice, text, dryRun="true")
    run_queued(app)
    job = job_of(alice, started["id"])
    assert job["rows"]["data"][0]["errors"] == [{"column": "Slot",
                                                 "message": "slot A2 of Box 3 is occupied"}]
    as_csv = alice.get(f"/api/import/{started['id']}/annotated?format=csv")
    as_xlsx = alice.get(f"/api/import/{started['id']}/annotated?format=xlsx")
    assert as_csv.status_code == as_xlsx.status_code == 200
    sheet = openpyxl.load_workbook(io.BytesIO(as_xlsx.data), read_only=True).active
    for rows in (list(csv.reader(io.StringIO(as_csv.get_data(as_text=True).lstrip("\ufeff")))),
                 [[str(cell or "") for cell in row] for row in sheet.iter_rows(values_only=True)]):
        assert rows[1][-1] == "Slot: slot A2 of Box 3 is occupied"
        assert not any(secret["id"] in cell or "Secret" in cell for row in rows for cell in row)
    printed = runner.invoke(args=["import", str(write_csv(text)), "--class", "Sample",
                                  "--dry-run", "--as", "alice"])
    assert printed.exit_code == 1
    assert "row 2: Slot: slot A2 of Box 3 is occupied" in printed.output
    assert secret["id"] not in printed.output and "Secret serum" not in printed.output
    # The administrator sees the sample, and is told its name (never its id).
    assert errors(importer.plan(write_csv(text))) == {
        2: [("Slot", "slot A2 of Box 3 is taken by Secret serum")]}


def test_rows_settled_by_another_rows_date_still_claim_their_slot(
        app: Flask, importer: Importer, box3: dict[str, Any],
        write_csv: Callable[..., Path]) -> None:
    """The §4 reproduction: an ambiguous date decided by a later row used to skip the slot
    check, so the dry run said 2 create and the commit failed."""
    path = write_csv("Name,Expiry,Location,Slot\nA,03/04/2026,Box 3,B1\nB,25/12/2026,Box 3,B1\n")
    plan = importer.plan(path)
    assert outcomes(plan) == [(2, "create"), (3, "error")]
    assert errors(plan) == {3: [("Slot", "slot B1 of Box 3 is also given to row 2")]}
    good = write_csv("Name,Expiry,Location,Slot\nA,03/04/2026,Box 3,B1\nB,25/12/2026,Box 3,\n")
    plan, _ids = importer.commit(good)
    assert plan.date_orders == {"Expiry": "dmy"}
    with app.app_context():
        stored = {sample.name: sample for sample in db.session.scalars(select(Sample))}
    assert str(stored["A"].expiry_date) == "2026-04-03"
    assert (stored["A"].position, stored["B"].position) == ("B1", "A2")


def test_the_dry_run_gives_the_slot_the_commit_writes_across_chunks(
        app: Flask, importer: Importer, box3: dict[str, Any], write_csv: Callable[..., Path],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A row without a slot takes the first free cell of its chunk's batch, as the commit
    does; a later chunk asking for that cell is told so in the dry run, not at commit."""
    from labapp.imports import engine

    monkeypatch.setattr(engine, "CHUNK", 2)
    clash = write_csv("Name,Location,Slot\nA,Box 3,\nB,Box 3,B2\nC,Box 3,A2\n")
    assert errors(importer.plan(clash)) == {4: [("Slot", "slot A2 of Box 3 is also given to "
                                                         "row 2")]}
    path = write_csv("Name,Location,Slot\nA,Box 3,\nB,Box 3,A2\nC,Box 3,\n")
    plan, _ids = importer.commit(path)
    assert plan.slots == {2: "B1", 4: "B2"} and errors(plan) == {}
    assert {name: place[1] for name, place in _placed(app).items()} == {
        "Serum 1": "A1", "A": "B1", "B": "A2", "C": "B2"}


def test_slots_freed_by_items_leaving_are_free_to_the_rows_below(
        app: Flask, admin: ApiClient, importer: Importer, box3: dict[str, Any],
        write_csv: Callable[..., Path]) -> None:
    other, = make_locations(admin, {"name": "Box 4", "rows": 1, "columns": 1})
    path = write_csv("Name,Location,Slot\nSerum 1,Box 4,\nNew,Box 3,A1\n")
    plan, _ids = importer.commit(path, match="name")
    assert outcomes(plan) == [(2, "update"), (3, "create")], errors(plan)
    assert _placed(app) == {"Serum 1": (other["id"], "A1"), "New": (box3["id"], "A1")}


def test_a_commit_that_fails_on_a_row_marks_that_row(
        app: Flask, admin: ApiClient, box3: dict[str, Any], write_csv: Callable[..., Path]
        ) -> None:
    """Someone takes the slot between the dry run and the commit: the commit's page shows
    the row as an error, in words, and nothing is written."""
    with app.app_context(), transaction():
        path = write_csv("Name,Location,Slot\nFirst,Box 3,B1\nSecond,Box 3,A2\n")
        table = open_table(path, path.name)
        spec = existing_class("Sample")
        actor = actor_of("admin")
        plan = plan_import(actor, spec, table, auto_map(spec, table.headers))
        assert plan.ok
        save(admin, {"eClass": "Sample", "name": "Thief", "locationID": box3["id"],
                     "position": "A2"})
        with pytest.raises(AppError) as failed:
            commit_import(actor, plan)
    assert failed.value.detail == "Row 3: slot A2 of Box 3 is taken by Thief"
    assert failed.value.code == "slot_taken"
    assert outcomes(plan) == [(2, "create"), (3, "error")]
    assert errors(plan) == {3: [("Slot", "slot A2 of Box 3 is taken by Thief")]}
    assert plan.counts == {"create": 1, "update": 0, "unchanged": 0, "error": 1}


def test_a_failed_commit_job_stores_and_shows_the_failing_row(
        app: Flask, admin: ApiClient, api_as: Callable[..., ApiClient],
        box3: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The §4 reproduction's second half: a commit job that fails on a row no longer reads
    "Create 2 · Errors 0"; its rows, page and annotated file show that row in words."""
    text = "Name,Location,Slot\nFirst,Box 3,B1\nSecond,Box 3,A2\n"
    dry = upload(admin, text, dryRun="true")
    run_queued(app)
    assert job_of(admin, dry["id"])["counts"]["error"] == 0
    save(admin, {"eClass": "Sample", "name": "Thief", "locationID": box3["id"],
                 "position": "A2"})
    commit = body_of(admin.post(f"/api/import/{dry['id']}/commit"), 202)
    run_queued(app)  # the commit job's own plan finds the slot taken since the dry run
    failed = job_of(admin, commit["id"], outcome="error")
    assert (failed["status"], failed["error"]) == (
        "failed", "1 row has an error: nothing was imported. Correct it and import the file "
                  "again.")
    assert failed["rows"]["data"][0]["errors"] == [
        {"column": "Slot", "message": "slot A2 of Box 3 is taken by Thief"}]

    # Taken between the commit job's plan and its write: the batch refuses the row.
    box5, = make_locations(admin, {"name": "Box 5", "rows": 2, "columns": 2})
    again = upload(admin, text.replace("Box 3", "Box 5"), dryRun="true")
    run_queued(app)
    real_commit = jobs.commit_import

    def racing(actor: Any, plan: Any, **options: Any) -> list[str]:
        save_batch(actor_of("admin"), [{"eClass": "Sample", "name": "Racer",
                                        "locationID": box5["id"], "position": "A2"}])
        return real_commit(actor, plan, **options)

    monkeypatch.setattr(jobs, "commit_import", racing)
    commit = body_of(admin.post(f"/api/import/{again['id']}/commit"), 202)
    run_queued(app)
    failed = job_of(admin, commit["id"], outcome="error")
    assert (failed["status"], failed["error"]) == ("failed",
                                                   "Row 3: slot A2 of Box 5 is taken by Racer")
    assert failed["counts"] == {"create": 1, "update": 0, "unchanged": 0, "error": 1}
    assert failed["rows"]["data"] == [{"row": 3, "outcome": "error",
                                       "errors": [{"column": "Slot", "message":
                                                   "slot A2 of Box 5 is taken by Racer"}]}]
    assert sorted(_placed(app)) == ["Serum 1", "Thief"]  # nothing of it was written
    page = api_as("admin", "cookie", password="admin-password-for-tests").get(
        f"/import/{commit['id']}").get_data(as_text=True)
    assert 'id="import-failed"' in page and 'id="count-error">1<' in page
    assert "slot A2 of Box 5 is taken by Racer" in page.split('id="import-rows"')[1]
    annotated = admin.get(f"/api/import/{commit['id']}/annotated?format=csv")
    assert "error,Slot: slot A2 of Box 5 is taken by Racer" in annotated.get_data(as_text=True)


def test_a_commit_refused_by_a_hidden_item_never_names_it(
        app: Flask, admin: ApiClient, member: Callable[..., ApiClient],
        department: Callable[..., str], grant: Grants,
        write_csv: Callable[..., Path]) -> None:
    shared, hidden = department("Shared"), department("Hidden")
    member("alice", department_id=shared)
    grant.department(shared, "Write", user="alice")
    box, = make_locations(admin, {"name": "Box 3", "rows": 2, "columns": 2,
                                  "departmentID": shared})
    with app.app_context(), transaction():
        path = write_csv("Name,Location,Slot\nMine,Box 3,B2\n")
        table = open_table(path, path.name)
        spec = existing_class("Sample")
        plan = plan_import(actor_of("alice"), spec, table, auto_map(spec, table.headers))
        assert plan.ok
        secret, = save(admin, {"eClass": "Sample", "name": "Secret serum",
                               "departmentID": hidden, "locationID": box["id"],
                               "position": "B2"})
        with pytest.raises(AppError) as failed:
            commit_import(actor_of("alice"), plan)
    assert failed.value.detail == "Row 2: slot B2 of Box 3 is occupied"
    assert errors(plan) == {2: [("Slot", "slot B2 of Box 3 is occupied")]}
    assert secret["id"] not in failed.value.detail
