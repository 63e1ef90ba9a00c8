"""The application the schemathesis contract test fuzzes, and the small lab it finds inside.

The fuzzer writes for real (entities, grants, users, PATs...), so it gets an application and a
database of its own, created once per module by ``flask --app labapp init`` like every other,
with login throttling off: thousands of generated logins must not lock anyone out.

The callers are the administrator and ``fuzz-member``, an ordinary member of department
"Fuzz A" with no roles; :meth:`FuzzLab.new_pat` gives either a personal access token (Basic
``username:PAT``), which survives what the fuzzer does to logins.

The lab: departments A (the member's home) and B, project P of A, an experiment with a step,
two samples (one in B, invisible to the member), a location, a sequence, a file and a project
setting. ``FuzzLab.known`` maps path parameter names to real values so that some generated
paths hit real rows, visible or not.
"""
from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from labapp.access.grant_sets import actor_for
from labapp.auth import pats
from labapp.db import db, transaction
from labapp.model import User
from tests.conftest import (
    ADMIN_PASSWORD,
    PASSWORD,
    basic_header,
    bearer_header,
    build_app,
    dispose,
    login,
    run_init,
)
from tests.databases import new_database

MEMBER = "fuzz-member"

# Login throttling and rate limits out of reach for the fuzzed application: every throttle
# limit goes here, and only here (a new limit is one more entry). The rate limits stay on,
# so that every answer's RateLimit fields are checked against the document.
_NEVER = 1_000_000_000
UNTHROTTLED: dict[str, Any] = {"LOGIN_MAX_FAILURES": _NEVER,
                               "LOGIN_MAX_FAILURES_PER_ADDRESS": _NEVER,
                               "LOGIN_MAX_FAILURES_PER_USERNAME": _NEVER,
                               "RATE_LIMIT_PER_TOKEN": _NEVER, "RATE_LIMIT_PER_USER": _NEVER,
                               "RATE_LIMIT_PER_ADDRESS": _NEVER,
                               # a generated long poll answers at once
                               "CHANGES_MAX_WAIT": 0}


@dataclass(frozen=True)
class FuzzLab:
    """The fuzzed application and the real values of its lab."""

    app: Flask
    known: dict[str, list[str]]

    def new_pat(self, username: str, name: str = "fuzz") -> tuple[str, str]:
        """A new PAT of ``username``, made directly: ``(Authorization header value, its id)``.

        Direct, because the fuzzer may have changed the user's password by then.
        """
        with self.app.app_context(), transaction():
            user = db.session.get(User, username)
            created = pats.create(actor_for(user, method=None), name, None)
        header = basic_header(username, created.value)["Authorization"]
        return header, created.token.id


def _created(response: Any, status: int = 201) -> Any:
    assert response.status_code == status, response.get_data(as_text=True)
    return response.get_json()


def _save(client: FlaskClient, auth: dict[str, str], *items: dict[str, Any]) -> list[str]:
    body = _created(client.post("/api/entity", json={"entities": list(items)}, headers=auth))
    return [entity["id"] for entity in body["entities"]]


def _make_lab(app: Flask) -> FuzzLab:
    client = app.test_client()
    admin = bearer_header(login(client, "admin", ADMIN_PASSWORD)["accessToken"])
    client.delete_cookie("labapp_session")
    dep_a, dep_b = _save(client, admin, {"eClass": "Department", "name": "Fuzz A"},
                         {"eClass": "Department", "name": "Fuzz B"})
    _save(client, admin, {"eClass": "User", "id": MEMBER, "name": "Fuzz Member",
                          "departmentID": dep_a, "password": PASSWORD})
    (project,) = _save(client, admin, {"eClass": "Project", "name": "Fuzz P",
                                       "departmentID": dep_a})
    experiment, step, location, sample_a, sample_b = _save(
        client, admin,
        {"eClass": "Experiment", "id": "#exp", "name": "Growth", "departmentID": dep_a,
         "projectID": project},
        {"eClass": "Step", "id": "#step", "name": "Inoculate", "experimentID": "#exp",
         "stepIndex": 1},
        {"eClass": "Location", "id": "#loc", "name": "Freezer", "capacity": 10,
         "departmentID": dep_a},
        {"eClass": "Sample", "name": "Alpha", "experimentID": "#exp", "stepID": "#step",
         "locationID": "#loc", "barcode": "FZ-0001"},
        {"eClass": "Sample", "name": "Bravo", "departmentID": dep_b})
    file_id = _created(client.post("/api/file", headers=admin, data={
        "name": "notes.txt", "content": base64.b64encode(b"fuzz").decode(),
        "mediaType": "text/plain", "subjectID": sample_a}))["id"]
    _created(client.post("/api/sequence", headers=admin, json={
        "id": "FUZZ", "prefix": "FZ", "minDigits": 4}))
    _created(client.post(f"/api/project/{project}/settings/layout", headers=admin,
                         json={"columns": 3}), 200)
    # A queued import (no worker runs here): its page tells that no worker takes it.
    import_job = _created(client.post("/api/import", headers=admin, data={
        "eClass": "Sample", "file": (BytesIO(b"Name\nFuzz import\n"), "fuzz.csv")},
        content_type="multipart/form-data"), 202)["id"]
    # A webhook to a public name (the fuzzer's pings queue; no worker sends them).
    hook = _created(client.post("/api/webhook", headers=admin, json={
        "name": "Fuzz", "url": "https://receiver.example.org/fuzz"}))["id"]
    lab = FuzzLab(app, {})
    # PATs nobody authenticates with, for DELETE /api/user/pat/{pat_id} to find.
    spare_pats = [lab.new_pat(username, "spare")[1] for username in ("admin", MEMBER)]
    entities = [dep_a, dep_b, project, experiment, step, location, sample_a, sample_b, file_id]
    users = ["admin", MEMBER]
    lab.known.update({
        "eclass": ["Sample", "experiment", "Department", "Project", "User", "File",
                   "Location", "Step"],
        "entity_id": entities + users,
        "department_id": [dep_a, dep_b],
        "access_department_id": [dep_a, dep_b],
        "project_id": [project],
        "user_id": users,
        "grantee_id": [*users, dep_a, dep_b],
        "file_id": [file_id],
        "pat_id": spare_pats,
        "settings_name": ["layout"],
        "field": ["name", "status", "barcode", "id", "departmentID"],
        "name": ["Sample", "SampleOverview", "StorageOverview"],
        "query": ["Alpha", "FZ", "a"],
        "text": ["Alpha", "F"],
        "value": ["Alpha", "FZ-0001", sample_a],
        "location_id": [location],  # storage (issue 11)
        "job_id": [import_job],  # imports (issue 22)
        "hook_id": [hook],  # webhooks (issue 36)
    })
    return lab


class _ClosingBody:
    """WSGI middleware: read each response whole and close it.

    schemathesis reads a response's body but never closes it, so a download (a file opened
    by ``send_file``) would stay open until garbage collection: a ResourceWarning, an error
    under ``-W error``. A WSGI server closes it, as this does.
    """

    def __init__(self, wsgi_app: Any) -> None:
        self.wsgi_app = wsgi_app

    def __call__(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        body = self.wsgi_app(environ, start_response)
        try:
            return [b"".join(body)]
        finally:
            if hasattr(body, "close"):
                body.close()


def fuzz_lab(directory: Path) -> Iterator[FuzzLab]:
    """Build the lab in a new database under ``directory``; drop it afterwards. Generated
    logins and Basic credentials check hundreds of passwords, at the suite's minimal Argon2
    cost (``_cheap_argon2``, for the whole test process)."""
    with new_database(directory) as url:
        application = build_app(directory, url, **UNTHROTTLED)
        application.wsgi_app = _ClosingBody(application.wsgi_app)
        try:
            run_init(application)
            yield _make_lab(application)
        finally:
            dispose(application)
