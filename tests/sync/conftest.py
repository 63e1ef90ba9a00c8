"""Fixtures of the export tests: initialised applications on new databases of either backend,
a lab's worth of data made through the public API, and the decoded content of an export."""
from __future__ import annotations

import base64
import gzip
import json
import secrets
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from tests.conftest import (
    ADMIN_PASSWORD,
    BACKEND,
    ApiClient,
    basic_header,
    build_app,
    dispose,
    new_database,
    run_init,
)

Content = dict[str, Any]


@pytest.fixture
def lab(tmp_path: Path, fresh_app: Callable[..., Flask]) -> Iterator[Callable[..., Flask]]:
    """Factory: ``lab("postgresql", init=True)`` is an application on a new database of that
    backend (default: the run's), as ``flask init`` leaves it unless ``init=False`` (on the
    run's backend, a copy of the initialised template)."""
    with ExitStack() as cleanup:

        def make(backend: str | None = None, *, init: bool = True, **overrides: Any) -> Flask:
            if init and backend in (None, BACKEND):
                return fresh_app(initialised=True, **overrides)
            instance = tmp_path / f"instance-{secrets.token_hex(4)}"
            kwargs = {"backend": backend} if backend else {}
            url = cleanup.enter_context(new_database(instance, **kwargs))
            app = build_app(instance, url, **overrides)
            cleanup.callback(dispose, app)
            if init:
                run_init(app)
            return app

        yield make


def admin_api(app: Flask) -> ApiClient:
    return ApiClient(app.test_client(), basic_header("admin", ADMIN_PASSWORD), "basic")


def _ok(response: Any, status: int = 201) -> Any:
    assert response.status_code == status, response.get_data(as_text=True)
    return response.get_json()


def populate(app: Flask) -> dict[str, Any]:
    """Entities of several classes (parent links, a project, a location), a file with its
    content, a user with a grant, a dashboard shared with them (a notification), a sequence
    and the audit events of all that; returns the file's content."""
    api = admin_api(app)
    _ok(api.post("/api/sequence", json={"id": "Batch", "prefix": "BAT", "minDigits": 3,
                                        "nextValue": 42}), 201)
    content = b"\x00binary \xff content \xe2\x9c\x93\n" * 1000
    entities = [
        {"eClass": "Project", "id": "#p", "name": "Genomes"},
        {"eClass": "Location", "id": "#freezer", "name": "Freezer A", "locationType": "Freezer"},
        {"eClass": "Experiment", "id": "#e", "name": "Run 1", "projectID": "#p",
         "startDate": "2026-01-02", "attributes": {"nested": {"k": [1, 2.5, None]}}},
        {"eClass": "Sample", "id": "#s1", "name": "Parent", "experimentID": "#e",
         "locationID": "#freezer", "amount": 1.25, "unit": "mL", "description": "Ünïcode ✓",
         "files": [{"name": "data.bin", "mediaType": "application/octet-stream",
                    "content": base64.b64encode(content).decode()}]},
        {"eClass": "Sample", "id": "#s2", "name": "Child", "parentID": "#s1"},
        {"eClass": "Note", "id": "#n", "subjectID": "#s1", "content": "a note"},
    ]
    made = _ok(api.post("/api/entity", json={"entities": entities}), 201)
    _ok(api.post("/api/entity", json={"entities": [
        {"eClass": "Sample", "id": made["entities"][3]["id"], "status": "InProgress"}]}), 200)
    _ok(api.post("/api/entity", json={"entities": [
        {"eClass": "User", "id": "carol", "name": "Carol", "password": "a long password 1",
         "departmentID": "DEP00001"}]}), 201)
    _ok(api.post("/api/dashboard", json={
        "name": "Shared", "widgets": [], "shares": {"userIDs": ["carol"]}}), 201)
    return {"content": content}


def decoded(path: Path) -> Content:
    """An export's content, independent of the database it came from: the rows of every table
    (sorted), the blobs, the entity count. The header's time and source are left out."""
    tables: dict[str, list[dict[str, Any]]] = {}
    blobs: dict[str, bytes] = {}
    manifest: dict[str, Any] = {}
    current: Any = None
    with gzip.open(path, "rb") as stream:
        lines = [json.loads(line) for line in stream]
    for value in lines[1:]:
        if isinstance(value, dict) and "table" in value:
            current = ("table", value["table"], value["columns"])
            tables[value["table"]] = []
        elif isinstance(value, dict) and "blob" in value:
            current = ("blob", value["blob"])
            blobs[value["blob"]] = b""
        elif isinstance(value, dict) and "manifest" in value:
            manifest = value["manifest"]
        elif isinstance(value, list):
            tables[current[1]].append(dict(zip(current[2], value, strict=True)))
        else:
            blobs[current[1]] += base64.b64decode(value)
    for rows in tables.values():
        rows.sort(key=lambda row: json.dumps(row, sort_keys=True))
    return {"tables": tables, "blobs": blobs, "entities": manifest["entities"],
            "rows": {name: entry["rows"] for name, entry in manifest["tables"].items()}}


def save(app: Flask) -> Path:
    """``POST /api/sync/save`` as the admin; the path of the export written."""
    body = _ok(admin_api(app).post("/api/sync/save"), 201)
    return Path(app.config["LABAPP"]["INSTANCE_PATH"]) / "sync" / body["filename"]


def restore(app: Flask, path: Path, *extra: str) -> Any:
    """``flask sync restore`` into ``app``'s database."""
    return app.test_cli_runner().invoke(args=["sync", "restore", str(path), *extra])
