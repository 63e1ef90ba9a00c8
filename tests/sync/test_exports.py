"""``POST /api/sync/save``, ``GET /api/sync/files`` and ``GET /api/sync/files/{filename}``."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, insert, select

from labapp.blobs import content_of
from labapp.db import db
from labapp.exports import progress, service
from labapp.model import Entity, Sequence
from tests.conftest import ADMIN_PASSWORD, BACKEND, ApiClient, basic_header
from tests.sync.conftest import admin_api, decoded, populate, save


def test_save_exports_everything_lists_it_and_downloads_it(lab: Callable[..., Flask]) -> None:
    app = lab()
    made = populate(app)
    api = admin_api(app)
    response = api.post("/api/sync/save")
    assert response.status_code == 201, response.get_data(as_text=True)
    body = response.get_json()
    folder = Path(app.config["LABAPP"]["INSTANCE_PATH"]) / "sync"
    path = folder / body["filename"]
    assert body["bytes"] == path.stat().st_size
    assert not [p.name for p in folder.iterdir() if p.name.endswith(".partial")]

    content = decoded(path)
    with app.app_context():
        assert body["entities"] == content["entities"] == db.session.scalar(
            select(func.count()).select_from(Entity))
    tables = content["tables"]
    assert {"carol", "admin"} <= {row["id"] for row in tables["app_user"]}
    assert {row["id"]: row["next_value"] for row in tables["sequence"]}["Batch"] == 42
    assert tables["dashboard_share"][0]["target"] == "carol"
    assert [row["user_id"] for row in tables["notification"]] == ["carol"]
    assert len(tables["audit_event"]) >= len(tables["entity"])
    assert {row["role_name"] for row in tables["user_role"]} >= {"ADMIN"}
    samples = {row["id"]: row for row in tables["sample"]}
    assert any(row["parent_id"] in samples for row in samples.values())
    [file_row] = tables["file"]
    assert content["blobs"] == {file_row["sha256"]: made["content"]}
    assert content["rows"] == {name: len(rows) for name, rows in tables.items()}

    listed = api.get("/api/sync/files")
    assert listed.status_code == 200
    [entry] = listed.get_json()
    assert entry == {"name": body["filename"], "size": body["bytes"],
                     "created": entry["created"], "entities": body["entities"]}
    assert entry["created"].endswith("+00:00")
    download = api.get(f"/api/sync/files/{body['filename']}")
    assert download.status_code == 200
    assert download.mimetype == "application/gzip"
    assert download.data == path.read_bytes()
    download.close()


def test_every_table_of_the_model_is_exported(lab: Callable[..., Flask]) -> None:
    """A table added to the model is exported without anyone remembering to add it; the
    tables left out on purpose (login state) are tables of the model."""
    app = lab()
    content = decoded(save(app))
    with app.app_context():
        model = set(db.metadata.tables)
    assert service.NOT_EXPORTED <= model
    assert set(content["tables"]) == model - service.NOT_EXPORTED


def test_an_export_is_one_snapshot(lab: Callable[..., Flask]) -> None:
    """A row committed while the export runs is not in it, and the manifest's counts are the
    rows the export holds."""
    app = lab()
    with app.app_context():
        calls = []

        def commit_meanwhile(done: int, total: int) -> None:
            if not calls:
                with db.engine.begin() as other:
                    other.execute(insert(Sequence.__table__).values(
                        id="Meanwhile", prefix="MW", min_digits=3, next_value=1))
            calls.append(done)

        result = service.save_export(db.engine, app.config["LABAPP"]["INSTANCE_PATH"],
                                     content_of, commit_meanwhile)
        assert db.session.get(Sequence, "Meanwhile") is not None
    content = decoded(Path(app.config["LABAPP"]["INSTANCE_PATH"]) / "sync" / result.filename)
    assert "Meanwhile" not in {row["id"] for row in content["tables"]["sequence"]}
    assert content["rows"] == {name: len(rows) for name, rows in content["tables"].items()}


@pytest.mark.parametrize("name", [
    "../labapp.db", "..%2Flabapp.db", "..%2F..%2Fetc%2Fpasswd", "labapp.db", "secret-key",
    "labapp-export-20260101T000000Z-abcdef.jsonl.gz",
    "labapp-export-20260101T000000Z-abcdef.jsonl.gz.manifest.json",
    "%2Fetc%2Fpasswd", "sync/../labapp.db"])
def test_a_name_that_is_not_an_export_is_404(client: FlaskClient, name: str) -> None:
    # Routing merges a doubled slash with a redirect first; where it leads is 404 too.
    response = client.get(f"/api/sync/files/{name}", follow_redirects=True,
                          headers=basic_header("admin", ADMIN_PASSWORD))
    assert response.status_code == 404
    assert response.mimetype == "application/problem+json"
    assert response.get_json()["code"] == "export_not_found"


def test_while_an_export_runs_another_is_refused(lab: Callable[..., Flask]) -> None:
    """The page's background export and the API share one lock (on PostgreSQL the
    database's, seen by every host): while one holds it, the API answers 409."""
    app = lab()
    instance = app.config["LABAPP"]["INSTANCE_PATH"]
    api = admin_api(app)
    with app.app_context(), progress.holding(instance, db.engine):
        assert progress.locked(db.engine) == (BACKEND == "postgresql")
        refused = api.post("/api/sync/save")
        assert refused.status_code == 409
        assert refused.get_json()["code"] == "export_running"
    assert api.post("/api/sync/save").status_code == 201, "the lock is dropped afterwards"
    with app.app_context():
        assert not progress.locked(db.engine)


def test_a_partial_export_is_neither_listed_nor_served(lab: Callable[..., Flask]) -> None:
    app = lab()
    folder = service.export_folder(app.config["LABAPP"]["INSTANCE_PATH"])
    half = "labapp-export-20260101T000000Z-abcdef.jsonl.gz"
    (folder / half).write_bytes(b"\x1f\x8b half written")  # no manifest beside it
    api = admin_api(app)
    assert api.get("/api/sync/files").get_json() == []
    assert api.get(f"/api/sync/files/{half}").status_code == 404


@pytest.mark.parametrize(("method", "url"), [
    ("POST", "/api/sync/save"), ("GET", "/api/sync/files"),
    ("GET", "/api/sync/files/labapp-export-20260101T000000Z-abcdef.jsonl.gz")])
def test_only_admin_may_and_anonymous_is_401(app: Flask, client: FlaskClient,
                                             api_as: Callable[..., ApiClient],
                                             make_user: Callable[..., str],
                                             method: str, url: str) -> None:
    assert client.open(url, method=method).status_code == 401
    make_user("dm", roles=["DATA_MANAGER"])
    response = api_as("dm").open(method, url)
    assert response.status_code == 403
    assert response.get_json()["code"] == "missing_scope"
    assert not list(service.export_folder(app.config["LABAPP"]["INSTANCE_PATH"]).glob("*.gz"))


def test_not_on_premises_even_admin_is_403(lab: Callable[..., Flask]) -> None:
    app = lab(ON_PREMISES=False)
    response = admin_api(app).post("/api/sync/save")
    assert response.status_code == 403
    assert not list(service.export_folder(app.config["LABAPP"]["INSTANCE_PATH"]).iterdir())
