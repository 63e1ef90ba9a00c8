"""``/api/import``: a dry run, its commit, paging the outcomes, templates and annotated
files (decisions §15)."""
from __future__ import annotations

import codecs
import csv
import io
from collections.abc import Callable
from typing import Any

import openpyxl
from flask import Flask
from sqlalchemy import select, update

from labapp import liveness
from labapp.db import db, transaction
from labapp.imports import jobs, saved, workers
from labapp.model import ImportJob, Sample
from labapp.model.registry import existing_class
from tests.conftest import ApiClient
from tests.helpers.processes import held_lock, killed
from tests.imports.conftest import actor_of
from tests.imports.uploading import BAD_CSV, GOOD_CSV, job_of, run_queued, stored, upload

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def _samples(app: Flask) -> dict[str, Sample]:
    with app.app_context():
        return {sample.name: sample for sample in db.session.scalars(select(Sample))}


def test_a_dry_run_tells_each_row_and_writes_nothing(app: Flask, admin: ApiClient) -> None:
    before = stored(app)["Entity"]
    started = upload(admin, BAD_CSV)
    assert started["status"] == "queued"
    queued = job_of(admin, started["id"])
    assert queued["status"] == "queued" and queued["rows"]["data"] == []
    assert run_queued(app) == 1
    job = job_of(admin, started["id"])
    assert job["status"] == "done" and job["dryRun"] is True
    assert job["counts"] == {"create": 2, "update": 0, "unchanged": 0, "error": 1}
    assert job["progress"] == {"done": 3, "total": 3}
    assert [row["outcome"] for row in job["rows"]["data"]] == ["create", "error", "create"]
    assert job["rows"]["data"][1]["row"] == 3
    assert job["rows"]["data"][1]["errors"][0]["column"] == "Volume (mL)"
    assert job["mapping"] == {"Name": "name", "Volume (mL)": "amount"}
    assert stored(app)["Entity"] == before


def test_the_outcomes_come_in_pages_and_errors_alone(app: Flask, admin: ApiClient) -> None:
    started = upload(admin, BAD_CSV)
    run_queued(app)
    first = job_of(admin, started["id"], **{"$top": "2"})["rows"]
    assert [row["row"] for row in first["data"]] == [2, 3]
    assert first["total"] == 3 and first["nextSkip"] == 2
    rest = job_of(admin, started["id"], **{"$top": "2", "$skip": "2"})["rows"]
    assert [row["row"] for row in rest["data"]] == [4] and rest["nextSkip"] is None
    errors = job_of(admin, started["id"], outcome="error")["rows"]
    assert [row["row"] for row in errors["data"]] == [3] and errors["total"] == 1
    bad = admin.get(f"/api/import/{started['id']}", query_string={"$top": "-1"})
    assert bad.status_code == 400 and bad.get_json()["code"] == "invalid_paging"


def test_a_committed_dry_run_writes_every_row(app: Flask, admin: ApiClient) -> None:
    dry_run = upload(admin, GOOD_CSV)
    early = admin.post(f"/api/import/{dry_run['id']}/commit")
    assert early.status_code == 409, early.get_json()
    run_queued(app)
    assert _samples(app) == {}
    committed = admin.post(f"/api/import/{dry_run['id']}/commit")
    assert committed.status_code == 202, committed.get_json()
    commit_id = committed.get_json()["id"]
    assert commit_id != dry_run["id"]
    again = admin.post(f"/api/import/{dry_run['id']}/commit")
    assert again.status_code == 202 and again.get_json()["id"] == commit_id
    run_queued(app)
    job = job_of(admin, commit_id)
    assert job["status"] == "done" and job["dryRun"] is False
    assert job["dryRunID"] == dry_run["id"]
    assert job["counts"]["create"] == 3
    samples = _samples(app)
    assert sorted(samples) == ["S-1", "S-2", "S-3"] and samples["S-1"].amount == 1.5
    assert {row["entityID"] for row in job["rows"]["data"]} == {
        sample.id for sample in samples.values()}


def test_a_commit_with_a_row_error_writes_nothing(app: Flask, admin: ApiClient) -> None:
    before = stored(app)["Entity"]
    started = upload(admin, BAD_CSV, dryRun="false")
    run_queued(app)
    job = job_of(admin, started["id"])
    assert job["status"] == "failed" and "nothing was imported" in job["error"]
    assert job["counts"]["error"] == 1
    assert stored(app)["Entity"] == before
    refused = admin.post(f"/api/import/{started['id']}/commit")
    assert refused.status_code == 409


def test_a_dry_run_with_errors_cannot_be_committed(app: Flask, admin: ApiClient) -> None:
    started = upload(admin, BAD_CSV)
    run_queued(app)
    refused = admin.post(f"/api/import/{started['id']}/commit")
    assert refused.status_code == 409 and "errors" in refused.get_json()["detail"]


def test_a_saved_mapping_is_used_by_name(app: Flask, admin: ApiClient) -> None:
    with app.app_context(), transaction():
        saved.save(actor_of("admin"), existing_class("Sample"), "Robot plates",
                   {"Tube": "name", "Vol": "amount"})
    started = upload(admin, "Tube,Vol\nT-1,3\n", mapping="robot plates", dryRun="false")
    run_queued(app)
    job = job_of(admin, started["id"])
    assert job["status"] == "done" and job["mapping"] == {"Tube": "name", "Vol": "amount"}
    assert _samples(app)["T-1"].amount == 3
    unknown = upload(admin, "Tube,Vol\nT-1,3\n", mapping="nothing saved", status=400)
    assert unknown["code"] == "invalid_mapping"


def test_a_mapping_given_as_json_is_used(app: Flask, admin: ApiClient) -> None:
    started = upload(admin, "Tube,Vol,Colour\nT-1,3,red\n",
                     mapping='{"Tube": "name", "Vol": "amount", "Colour": "attributes.colour"}')
    run_queued(app)
    job = job_of(admin, started["id"])
    assert job["counts"]["create"] == 1, job["rows"]
    assert job["mapping"]["Colour"] == "attributes.colour"


def _csv_rows(content: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(content.decode("utf-8-sig"))))


def test_the_annotated_file_adds_each_row_outcome(app: Flask, admin: ApiClient) -> None:
    started = upload(admin, BAD_CSV)
    not_yet = admin.get(f"/api/import/{started['id']}/annotated")
    assert not_yet.status_code == 409
    run_queued(app)
    response = admin.get(f"/api/import/{started['id']}/annotated", query_string={"format": "csv"})
    assert response.status_code == 200 and response.mimetype == "text/csv"
    assert "attachment" in response.headers["Content-Disposition"]
    assert response.data.startswith(codecs.BOM_UTF8 + b"Name,Volume (mL),Import outcome,")
    rows = _csv_rows(response.data)
    assert rows[0][:2] == ["Name", "Volume (mL)"] and len(rows) == 4
    assert "create" in rows[1] and "error" in rows[2]
    workbook = admin.get(f"/api/import/{started['id']}/annotated",
                         query_string={"format": "xlsx"})
    assert workbook.status_code == 200 and workbook.mimetype == XLSX
    sheet = openpyxl.load_workbook(io.BytesIO(workbook.data), read_only=True).active
    values = [list(row) for row in sheet.iter_rows(values_only=True)]
    assert values[0][:2] == ["Name", "Volume (mL)"] and "error" in values[2]


def test_the_annotated_file_of_a_semicolon_file_is_semicolon_separated(
        app: Flask, admin: ApiClient) -> None:
    started = upload(admin, GOOD_CSV)  # Name;Volume (mL);Expiry with decimal commas
    run_queued(app)
    response = admin.get(f"/api/import/{started['id']}/annotated")
    assert response.status_code == 200
    lines = response.data.decode("utf-8").splitlines()
    assert lines[0] == "\ufeffName;Volume (mL);Expiry;Import outcome;Import errors"
    assert lines[1] == "S-1;1,5;2026-03-01;create;"


def test_the_template_names_every_importable_field(admin: ApiClient) -> None:
    response = admin.get("/api/import/template/sample", query_string={"format": "csv"})
    assert response.status_code == 200 and response.mimetype == "text/csv"
    header, *examples = _csv_rows(response.data)
    assert "Name" in header and len(examples) == 1
    workbook = admin.get("/api/import/template/Sample", query_string={"format": "xlsx"})
    assert workbook.status_code == 200
    sheet = openpyxl.load_workbook(io.BytesIO(workbook.data), read_only=True).active
    assert list(next(sheet.iter_rows(values_only=True))) == header
    unknown = admin.get("/api/import/template/Nothing")
    assert unknown.status_code == 404 and unknown.get_json()["code"] == "unknown_class"
    bad_format = admin.get("/api/import/template/Sample", query_string={"format": "ods"})
    assert bad_format.status_code == 400


def test_an_xlsx_sheet_is_chosen_by_name(app: Flask, admin: ApiClient,
                                         write_xlsx: Callable[..., Any]) -> None:
    def second_sheet(sheet: Any) -> None:
        other = sheet.parent.create_sheet("Plates")
        other.append(["Name"])
        other.append(["P-1"])

    path = write_xlsx([["Name"], ["X-1"], ["X-2"]], prepare=second_sheet)
    started = upload(admin, path.read_bytes(), name="book.xlsx", sheet="Plates")
    run_queued(app)
    job = job_of(admin, started["id"])
    assert job["sheet"] == "Plates" and job["counts"]["create"] == 1
    missing = upload(admin, path.read_bytes(), name="book.xlsx", sheet="Nope", status=400)
    assert missing["code"] == "import_rejected"


def test_rows_matched_by_a_field_update_their_entities(app: Flask, admin: ApiClient) -> None:
    made = admin.post("/api/entity", json={"entities": [
        {"eClass": "Sample", "name": "M-1", "barcode": "BC-1", "amount": 1, "unit": "mL"}]})
    assert made.status_code == 201, made.get_json()
    started = upload(admin, "Barcode,Volume (mL)\nBC-1,4\nBC-2,1\n", match="barcode",
                     dryRun="false")
    run_queued(app)
    job = job_of(admin, started["id"])
    assert job["status"] == "done" and job["match"] == "barcode"
    assert job["counts"] == {"create": 1, "update": 1, "unchanged": 0, "error": 0}
    assert job["rows"]["data"][0]["entityID"] == made.get_json()["entities"][0]["id"]
    assert _samples(app)["M-1"].amount == 4


def test_a_job_tells_whether_a_worker_runs_it(app: Flask, admin: ApiClient) -> None:
    started = upload(admin, GOOD_CSV)
    queued = job_of(admin, started["id"])
    assert queued["worker"] == {"alive": False, "message": workers.NO_WORKER}
    assert "`flask --app labapp worker`" in workers.NO_WORKER
    with app.app_context():
        with liveness.holding():
            assert job_of(admin, started["id"])["worker"] == {"alive": True, "message": None}
    with held_lock(app) as (dead, process):
        with app.app_context():
            assert jobs.claim(started["id"]) == started["id"]
        with app.app_context(), transaction():
            db.session.execute(update(ImportJob).where(ImportJob.id == started["id"])
                               .values(worker=dead))
        assert job_of(admin, started["id"])["worker"] == {"alive": True, "message": None}
        killed(process)
    stranded = job_of(admin, started["id"])
    assert stranded["status"] == "running"
    assert stranded["worker"]["alive"] is False
    assert stranded["worker"]["message"].startswith(workers.STOPPED)
    assert "No worker is running to record it" in stranded["worker"]["message"]
    with app.app_context(), liveness.holding():
        # A worker runs: its next look records the failure; until then the job says so.
        assert job_of(admin, started["id"])["worker"] == {"alive": False,
                                                          "message": workers.STOPPED}
        assert jobs.upkeep() is True
    failed = job_of(admin, started["id"])
    assert failed["status"] == "failed" and failed["worker"] is None
