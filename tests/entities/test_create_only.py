"""Create-only properties that make entities of their own: ``notes`` (Note), ``files`` (File,
content in the instance store once per SHA-256) and Step ``input`` (StepInput)."""
from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select

from labapp.db import db
from labapp.model import File, Note, StepInput
from tests.conftest import ApiClient
from tests.contracts.problem import assert_problem
from tests.entities.conftest import fetch, listing, save, snapshot


def encoded(content: bytes) -> str:
    return base64.b64encode(content).decode()


def blobs_named(app: Flask, sha256: str) -> list[Path]:
    root = Path(app.config["LABAPP"]["INSTANCE_PATH"]) / "files"
    return list(root.rglob(sha256))


def rows(app: Flask, model: type, **where: Any) -> list[Any]:
    with app.app_context():
        query = select(model).filter_by(**where).order_by(model.id)
        return list(db.session.scalars(query))


@pytest.fixture
def content() -> bytes:
    """Content no other test stores (the file store outlives the rolled-back database)."""
    return b"plate reader export\n" + os.urandom(16)


# --- notes ---------------------------------------------------------------------------------

def test_notes_become_note_entities_about_the_new_entity(app: Flask, admin: ApiClient,
                                                         project) -> None:
    vaccine = project("Vaccine")
    (sample,) = save(admin, {"eClass": "Sample", "projectID": vaccine, "notes": [
        {"content": "thawed twice"}, {"content": "label smudged", "type": "Warning"}]})
    assert "notes" not in sample

    notes = rows(app, Note, subject_id=sample["id"])
    assert [(note.content, note.type) for note in notes] == [("thawed twice", "Other"),
                                                            ("label smudged", "Warning")]
    for note in notes:
        assert note.id.startswith("NTE") and note.subject_class == "Sample"
        assert (note.department_id, note.project_id) == (sample["departmentID"], vaccine)
        assert note.created_by == "admin" and note.version == 1
        detail = fetch(admin, "Note", note.id)
        assert [event["kind"] for event in detail["events"]] == ["Created"]
        assert detail["auditEvents"][0]["action"] == "create"

    events = fetch(admin, "Sample", sample["id"])["events"]
    assert [event["kind"] for event in events] == ["NoteAdded", "NoteAdded", "Created"]
    assert {event["data"]["id"] for event in events[:2]} == {note.id for note in notes}
    assert all(event["data"]["name"] for event in events[:2])


def test_a_note_made_directly_names_its_subject_class(admin: ApiClient) -> None:
    save(admin, {"eClass": "Experiment", "id": "CO-EXP"})
    (note,) = save(admin, {"eClass": "Note", "subjectID": "CO-EXP", "content": "direct"})
    assert note["subjectClass"] == "Experiment"
    kinds = [event["kind"] for event in fetch(admin, "Experiment", "CO-EXP")["events"]]
    assert kinds == ["NoteAdded", "Created"]


def test_a_subject_class_that_contradicts_the_subject_is_400(app: Flask,
                                                             admin: ApiClient) -> None:
    save(admin, {"eClass": "Experiment", "id": "CO-EXP"})
    before = snapshot(app)
    response = admin.post("/api/entity", json={"entities": [
        {"eClass": "Note", "subjectID": "CO-EXP", "subjectClass": "Sample"}]})
    body = assert_problem(response, 400, "invalid_entity", errors=True)
    assert body["errors"][0]["field"] == "entities.0.subjectClass"
    assert snapshot(app) == before


@pytest.mark.parametrize(("notes", "field"), [
    ("a note", "entities.0.notes"),
    ({"content": "x"}, "entities.0.notes"),
    (["a note"], "entities.0.notes.0"),
    ([{"type": "Warning"}], "entities.0.notes.0.content"),
    ([{"content": 5}], "entities.0.notes.0.content"),
    ([{"content": "x", "author": "me"}], "entities.0.notes.0.author"),
    ([{"content": "x", "type": "t" * 65}], "entities.0.notes.0.type"),
])
def test_malformed_notes_are_400(app: Flask, admin: ApiClient, notes: Any, field: str) -> None:
    before = snapshot(app)
    response = admin.post("/api/entity", json={"entities": [{"eClass": "Sample",
                                                             "notes": notes}]})
    body = assert_problem(response, 400, "invalid_entity", errors=True)
    assert body["errors"][0]["field"] == field
    assert snapshot(app) == before


# --- files ---------------------------------------------------------------------------------

def test_files_become_file_entities_with_stored_content(app: Flask, admin: ApiClient,
                                                        content: bytes) -> None:
    digest = hashlib.sha256(content).hexdigest()
    (experiment,) = save(admin, {"eClass": "Experiment", "files": [
        {"name": "export.csv", "content": encoded(content), "mediaType": "text/csv",
         "type": "RawData", "description": "first run"}]})

    detail = fetch(admin, "Experiment", experiment["id"])
    (file,) = detail["files"]
    assert file["eClass"] == "File" and file["id"].startswith("FIL")
    assert (file["name"], file["mediaType"], file["type"], file["description"]) == (
        "export.csv", "text/csv", "RawData", "first run")
    assert (file["size"], file["sha256"]) == (len(content), digest)
    assert (file["subjectClass"], file["subjectID"]) == ("Experiment", experiment["id"])
    assert file["departmentID"] == experiment["departmentID"]
    (blob,) = blobs_named(app, digest)
    assert blob.read_bytes() == content
    assert blob.parent.name == digest[2:4] and blob.parent.parent.name == digest[:2]
    assert [event["kind"] for event in detail["events"]] == ["FileAdded", "Created"]
    assert detail["events"][0]["data"] == {"id": file["id"], "name": "export.csv"}


def test_identical_content_is_stored_once(app: Flask, admin: ApiClient,
                                          content: bytes) -> None:
    digest = hashlib.sha256(content).hexdigest()
    save(admin, {"eClass": "Sample", "id": "CO-A", "files": [
        {"name": "one.bin", "content": encoded(content)},
        {"name": "two.bin", "content": encoded(content)}]})
    save(admin, {"eClass": "Sample", "files": [{"name": "three.bin",
                                                "content": encoded(content)}]})

    files = rows(app, File, sha256=digest)
    assert sorted(file.name for file in files) == ["one.bin", "three.bin", "two.bin"]
    assert len(blobs_named(app, digest)) == 1
    assert [file["name"] for file in fetch(admin, "Sample", "CO-A")["files"]] == ["one.bin",
                                                                                  "two.bin"]


def test_an_empty_file_and_a_default_media_type(admin: ApiClient) -> None:
    (sample,) = save(admin, {"eClass": "Sample", "files": [{"name": "empty", "content": ""}]})
    (file,) = fetch(admin, "Sample", sample["id"])["files"]
    assert file["size"] == 0
    assert file["sha256"] == hashlib.sha256(b"").hexdigest()
    assert file["mediaType"] == "application/octet-stream"


def test_a_client_cannot_name_a_digest(admin: ApiClient) -> None:
    # Naming another file's digest would hand out its content.
    (file,) = save(admin, {"eClass": "File", "name": "forged", "sha256": "a" * 64,
                           "size": 12})
    assert file["sha256"] is None and file["size"] is None
    response = admin.post("/api/entity", json={"entities": [{"eClass": "Sample", "files": [
        {"name": "forged", "content": "", "sha256": "a" * 64}]}]})
    assert assert_problem(response, 400, "invalid_entity",
                          errors=True)["errors"][0]["field"] == "entities.0.files.0.sha256"


@pytest.mark.parametrize(("files", "field"), [
    ([{"name": "x.bin", "content": "not base64!"}], "entities.0.files.0.content"),
    ([{"name": "x.bin", "content": "abc"}], "entities.0.files.0.content"),
    ([{"name": "x.bin", "content": "YWJj\nZA=="}], "entities.0.files.0.content"),
    ([{"name": "x.bin", "content": 42}], "entities.0.files.0.content"),
    ([{"name": "x.bin"}], "entities.0.files.0.content"),
    ([{"content": "YWJj"}], "entities.0.files.0.name"),
    ([{"name": "", "content": "YWJj"}], "entities.0.files.0.name"),
    ([{"name": "ok", "content": "YWJj"}, {"name": "bad", "content": "%%%"}],
     "entities.0.files.1.content"),
    ("YWJj", "entities.0.files"),
    ([{"name": "x", "content": "YWJj", "mediaType": 3}], "entities.0.files.0.mediaType"),
])
def test_malformed_files_are_400(app: Flask, admin: ApiClient, files: Any, field: str) -> None:
    before = snapshot(app)
    response = admin.post("/api/entity", json={"entities": [
        {"eClass": "Sample", "id": "#first"}, {"eClass": "Sample", "files": files}]})
    body = assert_problem(response, 400, "invalid_entity", errors=True)
    assert body["errors"][0]["field"] == field.replace("entities.0", "entities.1")
    assert body["detail"].startswith("entities[1]")
    assert snapshot(app) == before


def test_files_sent_with_an_update_are_ignored(app: Flask, admin: ApiClient,
                                               content: bytes) -> None:
    save(admin, {"eClass": "Sample", "id": "CO-UPD"})
    (saved,) = save(admin, {"eClass": "Sample", "id": "CO-UPD", "name": "renamed", "files": [
        {"name": "late.bin", "content": encoded(content)}, {"name": "junk", "content": "%"}]},
        status=200)
    assert saved["name"] == "renamed"
    assert fetch(admin, "Sample", "CO-UPD")["files"] == []
    assert rows(app, File, subject_id="CO-UPD") == []
    assert blobs_named(app, hashlib.sha256(content).hexdigest()) == []


# --- Step input ----------------------------------------------------------------------------

def test_step_input_becomes_step_input_rows(app: Flask, admin: ApiClient) -> None:
    save(admin, {"eClass": "Sample", "id": "CO-S1"}, {"eClass": "Plate", "id": "CO-P1"})
    step, sample = save(admin, {"eClass": "Step", "input": [
        {"inputID": "CO-S1", "amount": 1.5, "unit": "ml"},
        {"inputID": "CO-P1", "name": "the plate"},
        {"inputID": "#fresh", "inputPosition": 7}]},
        {"eClass": "Sample", "id": "#fresh"})
    assert "input" not in step

    inputs = rows(app, StepInput, step_id=step["id"])
    assert [(row.input_id, row.input_class, row.input_position, row.amount, row.unit)
            for row in inputs] == [("CO-S1", "Sample", 1, 1.5, "ml"),
                                   ("CO-P1", "Plate", 2, None, None),
                                   (sample["id"], "Sample", 7, None, None)]
    assert inputs[1].name == "the plate"
    assert all(row.id.startswith("SIN") and row.department_id == step["departmentID"]
               for row in inputs)
    listed = listing(admin, "StepInput", filter=f"stepID eq '{step['id']}'",
                     orderby="inputPosition")
    assert [row["inputID"] for row in listed["data"]] == ["CO-S1", "CO-P1", sample["id"]]


@pytest.mark.parametrize(("entry", "field", "code"), [
    ({"amount": 1}, "entities.0.input.0.inputID", "invalid_entity"),
    ({"inputID": "CO-NOWHERE"}, "entities.0.inputID", "invalid_entity"),
    ({"inputID": "CO-S1", "amount": "lots"}, "entities.0.input.0.amount", "invalid_entity"),
    ({"inputID": "CO-S1", "stepID": "x"}, "entities.0.input.0.stepID", "invalid_entity"),
    ({"inputID": "CO-S1", "inputClass": "Plate"}, "entities.0.inputClass", "invalid_entity"),
    ("CO-S1", "entities.0.input.0", "invalid_entity"),
])
def test_malformed_step_input_is_400(app: Flask, admin: ApiClient, entry: Any, field: str,
                                     code: str) -> None:
    save(admin, {"eClass": "Sample", "id": "CO-S1"})
    before = snapshot(app)
    response = admin.post("/api/entity", json={"entities": [{"eClass": "Step",
                                                             "input": [entry]}]})
    body = assert_problem(response, 400, code, errors=True)
    assert body["errors"][0]["field"] == field
    assert snapshot(app) == before


def test_input_is_only_a_property_of_steps(admin: ApiClient) -> None:
    response = admin.post("/api/entity", json={"entities": [{"eClass": "Sample",
                                                             "input": []}]})
    body = assert_problem(response, 400, "invalid_entity", errors=True)
    assert body["errors"][0]["field"] == "entities.0.input"


@pytest.mark.parametrize("media_type", ["text", "text/html\r\nX-Evil: 1", "a b/c", 42])
def test_a_malformed_media_type_of_an_attached_file_is_400(app: Flask, admin: ApiClient,
                                                           media_type: object) -> None:
    before = snapshot(app)
    response = admin.post("/api/entity", json={"entities": [{"eClass": "Sample", "files": [
        {"name": "a.txt", "content": "aGk=", "mediaType": media_type}]}]})
    body = assert_problem(response, 400, "invalid_entity", errors=True)
    assert body["errors"][0]["field"] == "entities.0.files.0.mediaType"
    assert snapshot(app) == before
