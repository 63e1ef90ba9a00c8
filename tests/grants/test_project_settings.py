"""GET/POST /api/project/{id}/settings/{name}: named JSON objects of a project."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import func, select

from labapp.db import db
from labapp.model import ProjectSetting
from tests.conftest import ApiClient
from tests.contracts.problem import assert_problem
from tests.grants.conftest import CALLERS

SETTINGS = {"columns": ["name", "status"], "pageSize": 50, "nested": {"a": [1, 2.5, None]}}


def _url(project_id: str, name: str = "grid") -> str:
    return f"/api/project/{project_id}/settings/{name}"


def _stored(app: Flask) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(ProjectSetting))


def test_a_setting_is_empty_until_saved_then_stored_and_replaced(
        admin: ApiClient, project: Callable[..., str]) -> None:
    project_id = project("P")
    assert admin.get(_url(project_id)).get_json() == {}

    saved = admin.post(_url(project_id), json=SETTINGS)
    assert saved.status_code == 200
    assert saved.get_json() == SETTINGS
    assert admin.get(_url(project_id)).get_json() == SETTINGS

    admin.post(_url(project_id), json={"pageSize": 10})
    assert admin.get(_url(project_id)).get_json() == {"pageSize": 10}
    assert admin.get(_url(project_id, "other")).get_json() == {}


@pytest.mark.parametrize("who", CALLERS)
def test_only_admin_and_project_write_managers_may_read_or_write(
        app: Flask, caller: Callable[[str], Any], project: Callable[..., str],
        who: str) -> None:
    project_id = project("P")
    client = caller(who)
    allowed = who in {"ADMIN", "DATA_MANAGER_PROJECT_WRITE"}
    read = client.get(_url(project_id))
    write = client.post(_url(project_id), json=SETTINGS)
    if allowed:
        assert (read.status_code, write.status_code) == (200, 200)
        assert _stored(app) == 1
    else:
        status, code = (401, "not_authenticated") if who == "anonymous" else (403,
                                                                              "missing_scope")
        assert_problem(read, status, code)
        assert_problem(write, status, code)
        assert _stored(app) == 0


@pytest.mark.parametrize("send, status, code", [
    (lambda c, p: c.post(_url(p), json=[1, 2]), 400, "validation_failed"),
    (lambda c, p: c.post(_url(p), json="text"), 400, "validation_failed"),
    (lambda c, p: c.post(_url(p), data="{}", headers={"Content-Type": "text/plain"}), 415,
     "unsupported_media_type"),
    (lambda c, p: c.post(_url(p), data="{oops", headers={"Content-Type": "application/json"}),
     400, "invalid_json"),
    (lambda c, p: c.post(_url(p, "bad name!"), json={}), 400, "invalid_input"),
    (lambda c, p: c.post(_url("PRJ99999"), json={}), 404, "not_found"),
    (lambda c, p: c.get(_url("PRJ99999")), 404, "not_found"),
])
def test_bad_input_changes_nothing(app: Flask, admin: ApiClient, project: Callable[..., str],
                                   send, status: int, code: str) -> None:
    project_id = project("P")
    response = send(admin, project_id)
    assert response.status_code == status, response.get_json()
    assert response.get_json()["code"] == code
    assert _stored(app) == 0


def test_settings_go_with_their_project(app: Flask, admin: ApiClient,
                                        project: Callable[..., str]) -> None:
    project_id = project("P")
    admin.post(_url(project_id), json=SETTINGS)
    assert admin.delete(f"/api/project/{project_id}").status_code == 204
    assert _stored(app) == 0
