"""Who sees an import (its owner and ADMIN; anyone else gets 404), who may start one, and
bad uploads refused at once with nothing stored."""
from __future__ import annotations

from collections.abc import Callable
from io import BytesIO

import pytest
from flask import Flask

from tests.conftest import ApiClient
from tests.imports.uploading import GOOD_CSV, job_of, run_queued, stored, upload, upload_files


def test_an_import_is_seen_by_its_owner_and_admin_only(
        app: Flask, admin: ApiClient, member: Callable[..., ApiClient]) -> None:
    alice, bob = member("alice"), member("bob")
    started = upload(alice, GOOD_CSV)
    run_queued(app)
    assert job_of(alice, started["id"])["ownerID"] == "alice"
    assert job_of(admin, started["id"])["status"] == "done"
    job_of(bob, started["id"], status=404)
    for path in (f"/api/import/{started['id']}/annotated",):
        assert bob.get(path).status_code == 404
    assert bob.post(f"/api/import/{started['id']}/commit").status_code == 404
    assert bob.get("/api/import/nothing-like-it").status_code == 404
    committed = alice.post(f"/api/import/{started['id']}/commit")
    assert committed.status_code == 202


def test_admin_commits_a_members_dry_run_as_themself(
        app: Flask, admin: ApiClient, member: Callable[..., ApiClient]) -> None:
    alice = member("alice")
    started = upload(alice, GOOD_CSV)
    run_queued(app)
    committed = admin.post(f"/api/import/{started['id']}/commit")
    assert committed.status_code == 202
    job_of(alice, committed.get_json()["id"], status=404)
    assert job_of(admin, committed.get_json()["id"])["ownerID"] == "admin"


def test_a_class_the_user_may_not_create_is_refused(
        app: Flask, member: Callable[..., ApiClient]) -> None:
    alice = member("alice")
    before = stored(app)
    refused = upload(alice, "Name\nChemistry\n", eClass="Department", status=403)
    assert refused["code"] == "forbidden"
    template = alice.get("/api/import/template/Department")
    assert template.status_code == 403
    files = alice.post("/api/import", data={"file": (BytesIO(b"Name\nx\n"), "f.csv"),
                                            "eClass": "File"},
                       content_type="multipart/form-data")
    assert files.status_code == 403
    assert stored(app) == before


def test_anonymous_callers_are_asked_to_log_in(client) -> None:
    assert client.get("/api/import/abc").status_code == 401
    assert client.post("/api/import", data={}).status_code == 401


@pytest.mark.parametrize(("form", "status", "code"), [
    ({"eClass": "Sample"}, 400, "validation_failed"),
    ({"file": (BytesIO(b""), "empty.csv"), "eClass": "Sample"}, 400, "import_rejected"),
    ({"file": (BytesIO(b"Name,Volume\n"), "header.csv"), "eClass": "Sample"}, 400,
     "import_rejected"),
    ({"file": (BytesIO(b"Name\nS-1\n"), "s.csv"), "eClass": "Nothing"}, 400, "unknown_class"),
    ({"file": (BytesIO(b"Name\nS-1\n"), "s.csv"), "eClass": "Sample",
      "mapping": '{"Name": "nonsense"}'}, 400, "invalid_mapping"),
    ({"file": (BytesIO(b"Name\nS-1\n"), "s.csv"), "eClass": "Sample",
      "mapping": '{"Absent": "name"}'}, 400, "invalid_mapping"),
    ({"file": (BytesIO(b"Name\nS-1\n"), "s.csv"), "eClass": "Sample",
      "mapping": '{"Name": '}, 400, "validation_failed"),
    ({"file": (BytesIO(b"Colour\nred\n"), "s.csv"), "eClass": "Sample",
      "mapping": '{"Colour": ""}'}, 400, "invalid_mapping"),
    ({"file": (BytesIO(b"Name\nS-1\n"), "s.csv"), "eClass": "Sample",
      "dryRun": "perhaps"}, 400, "validation_failed"),
    ({"file": (BytesIO(b"Name\nS-1\n"), "s.csv"), "eClass": "Sample",
      "match": "nonsense"}, 400, "invalid_match"),
    ({"file": (BytesIO(b"Name\nS-1\n"), "s.csv"), "eClass": "Sample",
      "match": "barcode"}, 400, "invalid_match"),
])
def test_bad_uploads_are_refused_and_nothing_is_stored(
        app: Flask, admin: ApiClient, form: dict, status: int, code: str) -> None:
    before, files = stored(app), upload_files(app)
    response = admin.post("/api/import", data=form, content_type="multipart/form-data")
    assert response.status_code == status, response.get_json()
    assert response.mimetype == "application/problem+json"
    assert response.get_json()["code"] == code
    assert stored(app) == before and upload_files(app) == files


def test_a_file_over_the_upload_limit_is_413(app: Flask, admin: ApiClient,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(app.config, "MAX_CONTENT_LENGTH", 2048)
    before, files = stored(app), upload_files(app)
    too_big = "Name\n" + "S-1\n" * 1000
    response = admin.post("/api/import", data={"file": (BytesIO(too_big.encode()), "s.csv"),
                                               "eClass": "Sample"},
                          content_type="multipart/form-data")
    assert response.status_code == 413
    assert response.mimetype == "application/problem+json"
    assert stored(app) == before and upload_files(app) == files


def test_only_multipart_is_accepted(admin: ApiClient) -> None:
    response = admin.post("/api/import", json={"eClass": "Sample"})
    assert response.status_code == 415
