"""What the import API, job and CLI tests share: uploading through the API, running the
queued jobs as the worker would, counting what an import may have written."""
from __future__ import annotations

from io import BytesIO
from pathlib import Path
from typing import Any

from flask import Flask
from sqlalchemy import func, select

from labapp.db import db, transaction
from labapp.imports import jobs, service, uploads
from labapp.model import Entity, ImportJob, ImportRow
from tests.conftest import ApiClient
from tests.imports.conftest import actor_of

GOOD_CSV = "Name;Volume (mL);Expiry\nS-1;1,5;2026-03-01\nS-2;0,25;24.12.2026\nS-3;2;2026-05-05\n"
BAD_CSV = "Name,Volume (mL)\nS-1,1.5\nS-2,lots\nS-3,2\n"


def upload(api: ApiClient, content: str | bytes, *, name: str = "samples.csv",
           status: int = 202, **fields: Any) -> dict[str, Any]:
    """``POST /api/import`` with ``content`` as the file part; the answer's body."""
    data = content.encode() if isinstance(content, str) else content
    form = {"file": (BytesIO(data), name), "eClass": "Sample", **fields}
    # Werkzeug's test client closes the request's body (a temporary file over 500 KB) with
    # the response only when it follows redirects (a 202 is none).
    with api.post("/api/import", data=form, content_type="multipart/form-data",
                  follow_redirects=True) as response:
        assert response.status_code == status, response.get_json()
        body: dict[str, Any] = response.get_json()
    return body


def queue_job(app: Flask, text: str = GOOD_CSV, *, dry_run: bool = True) -> str:
    """Queue a job as admin through the service, committed (not inside a test's rollback):
    its id."""
    with app.app_context():
        path = uploads.folder() / "queued.csv"
        path.write_text(text, encoding="utf-8")
        with path.open("rb") as stream:
            received = uploads.receive(stream)
        path.unlink()
        with transaction():
            job = service.start_import(actor_of("admin"), received, service.ImportRequest(
                eclass="Sample", filename="samples.csv", dry_run=dry_run))
        db.session.remove()
        return job.id


def run_queued(app: Flask) -> int:
    """Run every queued job the way the worker does; how many ran."""
    ran = 0
    with app.app_context():
        while jobs.upkeep():
            ran += 1
    return ran


def job_of(api: ApiClient, job_id: str, status: int = 200, **query: Any) -> dict[str, Any]:
    response = api.get(f"/api/import/{job_id}", query_string=query)
    assert response.status_code == status, response.get_json()
    body: dict[str, Any] = response.get_json()
    return body


def stored(app: Flask) -> dict[str, int]:
    """How many entities, import jobs and row outcomes the database holds."""
    with app.app_context():
        return {model.__name__: db.session.scalar(select(func.count()).select_from(model)) or 0
                for model in (Entity, ImportJob, ImportRow)}


def upload_files(app: Flask) -> list[str]:
    """The files of the uploads folder (stored, pending and partial uploads)."""
    folder = Path(app.config["LABAPP"]["INSTANCE_PATH"]) / "imports"
    return sorted(path.name for path in folder.iterdir()) if folder.exists() else []
