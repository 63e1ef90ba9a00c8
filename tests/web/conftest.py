"""Fixtures and helpers of the page tests: a signed-in author, her API client, a sample,
another department, readers for the HTML the pages answer, and the signed-in administrator
with a value for every URL argument (``world``) that the every-route tests send."""
from __future__ import annotations

import io
import re
from collections.abc import Callable
from html import unescape
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select
from werkzeug.test import TestResponse

from labapp.db import db, transaction
from labapp.imports import jobs as import_jobs
from labapp.imports import uploads
from labapp.model import Notification
from labapp.model.access import DepartmentAccess
from labapp.notifications.service import raise_for
from tests.conftest import ADMIN_PASSWORD, DEFAULT_DEPARTMENT, ApiClient
from tests.helpers.pages import html_of, page_login

AUTHOR = "alice"
ROW_LINK = re.compile(r'<td><a href="/entities/Sample/([^"]+)">')


def row_ids(response: TestResponse) -> list[str]:
    """The ids in the rows of a Sample table, in order."""
    return ROW_LINK.findall(html_of(response))


def input_value(html: str, name: str) -> str:
    """The value of the input called ``name`` of an entity form."""
    match = re.search(rf'<input id="field-{name}" name="{name}" type="[^"]+" value="([^"]*)"',
                      html)
    assert match, f"no input {name}"
    return unescape(match.group(1))


def hidden(html: str, name: str) -> str:
    """The value of the first hidden input called ``name``."""
    match = re.search(rf'<input type="hidden" name="{name}" value="([^"]*)"', html)
    assert match, f"no hidden input {name}"
    return unescape(match.group(1))


def save(api: ApiClient, *items: dict[str, Any], status: int = 201) -> list[dict[str, Any]]:
    """``POST /api/entity``; asserts ``status`` and returns the entities."""
    response = api.post("/api/entity", json={"entities": list(items)})
    assert response.status_code == status, response.get_json()
    return response.get_json()["entities"]


def fetch(api: ApiClient, eclass: str, entity_id: str) -> dict[str, Any]:
    """``GET /api/entity/{eClass}/{id}``, asserting 200."""
    response = api.get(f"/api/entity/{eclass}/{entity_id}")
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def grant(app: Flask, user: str, department: str, access: str) -> None:
    """Give ``user`` Read or Write on ``department``."""
    with app.app_context(), transaction() as session:
        session.add(DepartmentAccess(department_id=department, user_id=user,
                                     access_type=access))


def entity_reads(seen: list[str]) -> list[str]:
    """The statements among ``seen`` that read the ``entity`` table (not the login's own)."""
    return [statement for statement in seen
            if re.search(r"\bFROM entity\b", statement) and "login_session" not in statement]


@pytest.fixture
def author(make_user: Callable[..., str]) -> str:
    """alice, a member of the default department without roles."""
    return make_user(AUTHOR, name="Alice Liddell")


@pytest.fixture
def api(api_as: Callable[..., ApiClient], author: str) -> ApiClient:
    """The author through the API, to make the data the pages show."""
    return api_as(author)


@pytest.fixture
def signed_in(client: FlaskClient, author: str) -> FlaskClient:
    """A client logged in as the author through the login form."""
    assert page_login(client, author).status_code == 303
    return client


@pytest.fixture
def sample(api: ApiClient) -> dict[str, Any]:
    """A Sample of the author with two attributes."""
    return save(api, {"eClass": "Sample", "name": "Broth", "amount": 2.5,
                      "attributes": {"ph": 7.2, "colour": "amber"}})[0]


@pytest.fixture
def other_department(api_as: Callable[..., ApiClient]) -> str:
    """A second department, made by the administrator."""
    admin = api_as("admin", password=ADMIN_PASSWORD)
    return save(admin, {"eClass": "Department", "name": "Elsewhere"})[0]["id"]


@pytest.fixture
def admin(app: Flask) -> FlaskClient:
    """A client logged in as the administrator through the login form."""
    client = app.test_client()
    assert page_login(client, "admin", ADMIN_PASSWORD).status_code == 303
    return client


@pytest.fixture
def world(app: Flask, api_as: Callable[..., ApiClient], admin: FlaskClient) -> dict[str, str]:
    """Values for every URL argument of the URL map (see ``tests/helpers/routes.py``): a
    sample with a file, a project, the admin's PAT, a dashboard, a notification ..."""
    api: ApiClient = api_as("admin", password=ADMIN_PASSWORD)
    sample = save(api, {"eClass": "Sample", "name": "Broth"})[0]["id"]
    project = save(api, {"eClass": "Project", "name": "Soil"})[0]["id"]
    location = save(api, {"eClass": "Location", "name": "Shelf"})[0]["id"]  # storage
    uploaded = api.post("/api/file", data={
        "subjectID": sample, "file": (io.BytesIO(b"<script>alert(1)</script>"), "x.html")},
        content_type="multipart/form-data")
    assert uploaded.status_code == 201, uploaded.get_json()
    pat = api.post("/api/user/pat", json={"name": "headers"}).get_json()["id"]
    board = api.post("/api/dashboard", json={"name": "Headers", "widgets": [{
        "plugin": {"app": "labapp", "plugin": "note"}, "config": {"markdown": "x"},
        "gridster": {"x": 0, "y": 0, "cols": 6, "rows": 2}}]}).get_json()["id"]
    view = api.post("/api/saved-view", json={"name": "Headers", "eClass": "Sample"})
    rule = api.post("/api/alert-rule", json={
        "name": "Headers", "eClass": "Sample", "filter": "amount le 5",
        "recipients": {"userIDs": ["admin"]}, "channels": ["bell"], "cadence": "immediate"})
    hook = api.post("/api/webhook", json={"name": "Headers",
                                          "url": "https://receiver.example.org/labapp"})
    job = api.post("/api/import", data={"eClass": "Sample", "file": (
        io.BytesIO(b"Name\nImported\n"), "import.csv")}, content_type="multipart/form-data")
    with app.app_context():
        import_jobs.upkeep()  # the job is done: its page, rows and annotated file answer
        token = uploads.hold(uploads.receive(io.BytesIO(b"Name\nHeld\n")), owner="admin",
                             eclass="Sample", filename="held.csv")
    with app.app_context(), transaction():
        raise_for(["admin"], "DashboardShared", "headers", subject_class="Dashboard",
                  subject_id=board, actor_id="system")
        notification = db.session.scalar(select(Notification.id))
    return {"eclass": "Sample", "entity_id": sample, "file_id": uploaded.get_json()["id"],
            "area_slug": "departments", "target_id": DEFAULT_DEPARTMENT, "user_id": "admin",
            "department_id": DEFAULT_DEPARTMENT, "access_department_id": DEFAULT_DEPARTMENT,
            "project_id": project, "grantee_id": "admin", "settings_name": "layout",
            "query": "Bro", "field": "name", "text": "Bro", "value": "Broth",
            "name": "SampleOverview", "pat_id": pat, "filename": "app.css",
            "location_id": location, "term": "Bro",
            "dashboard_id": board, "index": 0, "notification_id": notification,
            "view_id": view.get_json()["id"], "rule_id": rule.get_json()["id"],
            "hook_id": hook.get_json()["id"], "delivery_id": 0,
            "job_id": job.get_json()["id"], "token": token}
