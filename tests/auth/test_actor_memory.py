"""The actor each worker remembers (``labapp.auth.actors``) never outlives a change.

Two applications on one database stand for two worker processes: each keeps its own memory
of alice's roles and grants. Every change is made through the first (or in plain SQL, as
any other path would), and the second, whose memory was filled just before, sees it on its
very next request: a role or grant given or taken, a grant to alice's department, her home
department moved, her account switched off, her token revoked. ``app_user.actor_version``,
which the database's triggers set to a never-used number on each change, is what tells it.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import delete, insert, select, text, update

from labapp.access.actor import ADMIN, Actor
from labapp.auth import pats
from labapp.db import db, transaction
from labapp.model import User
from labapp.model.access import DepartmentAccess, ProjectAccess
from labapp.model.org import Role, UserRole
from labapp.users.service import create_user
from tests.conftest import (
    ADMIN_PASSWORD,
    DEFAULT_DEPARTMENT,
    basic_header,
    bearer_header,
    build_app,
    dispose,
    login,
    run_init,
)

ALICE = "alice"


@dataclass
class Workers:
    """Two applications on one database, and what the tests need of it."""

    first: Flask
    second: Flask
    admin: dict[str, str]  # the administrator's Bearer header, sent to ``first``
    alice: dict[str, str]  # alice's PAT, sent to either
    alice_token_id: str
    elsewhere: str  # a department alice is no member of
    sample: str  # a Sample of that department

    def on_second(self, path: str, headers: dict[str, str] | None = None) -> int:
        """The status of a GET on the second worker as alice (or with ``headers``)."""
        client: FlaskClient = self.second.test_client(use_cookies=False)
        return client.get(path, headers=headers or self.alice).status_code

    def on_first(self, method: str, path: str, **kwargs: object) -> int:
        client: FlaskClient = self.first.test_client(use_cookies=False)
        response = client.open(path, method=method, headers=self.admin, **kwargs)
        assert response.status_code < 300, response.get_data(as_text=True)
        return response.status_code


def _created(client: FlaskClient, headers: dict[str, str], entity: dict[str, object]) -> str:
    response = client.post("/api/entity", headers=headers, json={"entities": [entity]})
    assert response.status_code == 201, response.get_json()
    return str(response.get_json()["entities"][0]["id"])


@pytest.fixture
def workers(fresh_app: Callable[..., Flask], tmp_path: Path) -> Iterator[Workers]:
    first = fresh_app()
    run_init(first)
    client = first.test_client(use_cookies=False)
    admin = bearer_header(login(client, "admin", ADMIN_PASSWORD)["accessToken"])
    elsewhere = _created(client, admin, {"eClass": "Department", "name": "Elsewhere"})
    sample = _created(client, admin, {"eClass": "Sample", "name": "S-elsewhere",
                                      "departmentID": elsewhere})
    with first.app_context(), transaction():
        create_user(username=ALICE, name="Alice", department_id=DEFAULT_DEPARTMENT,
                    password="alice-password-for-tests", created_by="admin")
        token = pats.create(Actor(user_id=ALICE), "two workers", None)
        alice = basic_header(ALICE, token.value)
        token_id = token.token.id
    settings = first.config["LABAPP"]
    second = build_app(tmp_path / "second-instance", settings["DATABASE_URL"])
    try:
        yield Workers(first, second, admin, alice, token_id, elsewhere, sample)
    finally:
        dispose(second)


def _sample(workers: Workers) -> str:
    return f"/api/entity/Sample/{workers.sample}"


def test_a_role_given_and_taken_shows_on_the_other_workers_next_request(
        workers: Workers) -> None:
    assert workers.on_second("/api/userRole") == 403
    workers.on_first("PUT", "/api/userRole/assign", json={"name": ADMIN, "userID": ALICE})
    assert workers.on_second("/api/userRole") == 200
    workers.on_first("PUT", "/api/userRole/revoke", json={"name": ADMIN, "userID": ALICE})
    assert workers.on_second("/api/userRole") == 403


def test_a_grant_to_the_user_given_and_taken(workers: Workers) -> None:
    access = f"/api/department/{workers.elsewhere}/access"
    assert workers.on_second(_sample(workers)) == 404
    workers.on_first("POST", access, json={"accessType": "Read", "userID": ALICE})
    assert workers.on_second(_sample(workers)) == 200
    workers.on_first("DELETE", f"{access}/user/{ALICE}")
    assert workers.on_second(_sample(workers)) == 404


def test_a_grant_to_the_users_department_given_and_taken(workers: Workers) -> None:
    access = f"/api/department/{workers.elsewhere}/access"
    assert workers.on_second(_sample(workers)) == 404
    workers.on_first("POST", access, json={"accessType": "Read",
                                           "accessDepartmentID": DEFAULT_DEPARTMENT})
    assert workers.on_second(_sample(workers)) == 200
    workers.on_first("DELETE", f"{access}/department/{DEFAULT_DEPARTMENT}")
    assert workers.on_second(_sample(workers)) == 404


def test_a_move_to_another_home_department(workers: Workers) -> None:
    assert workers.on_second(_sample(workers)) == 404
    workers.on_first("PUT", "/api/user", json={"id": ALICE, "departmentID": workers.elsewhere})
    assert workers.on_second(_sample(workers)) == 200


def test_a_deactivated_account(workers: Workers) -> None:
    assert workers.on_second("/api/user") == 200
    workers.on_first("PUT", "/api/user", json={"id": ALICE, "isActive": False})
    assert workers.on_second("/api/user") == 401


def test_a_revoked_token(workers: Workers) -> None:
    assert workers.on_second("/api/user") == 200
    with workers.first.app_context(), transaction():
        pats.revoke(Actor(user_id=ALICE), workers.alice_token_id)
    assert workers.on_second("/api/user") == 401


def test_an_ended_login(workers: Workers) -> None:
    client = workers.first.test_client(use_cookies=False)
    pair = login(client, ALICE, "alice-password-for-tests")
    bearer = bearer_header(pair["accessToken"])
    assert workers.on_second("/api/user", bearer) == 200
    response = client.post("/api/auth/logout", json={"refreshToken": pair["refreshToken"]},
                           headers=bearer)
    assert response.status_code < 300, response.get_data(as_text=True)
    assert workers.on_second("/api/user", bearer) == 401


def _version(app: Flask) -> int:
    with app.app_context(), transaction():
        return int(db.session.scalar(select(User.actor_version).where(User.id == ALICE)))


def _project(app: Flask, admin: dict[str, str]) -> str:
    return _created(app.test_client(use_cookies=False), admin,
                    {"eClass": "Project", "name": "Versioned"})


CHANGES: dict[str, Callable[[str, str], list[object]]] = {
    "role given": lambda _d, _p: [insert(UserRole).values(user_id=ALICE, role_name=ADMIN)],
    "user grant on a department": lambda d, _p: [insert(DepartmentAccess).values(
        department_id=d, user_id=ALICE, access_type="Read")],
    "department grant on a department": lambda d, _p: [insert(DepartmentAccess).values(
        department_id=d, access_department_id=DEFAULT_DEPARTMENT, access_type="Read")],
    "user grant on a project": lambda _d, p: [insert(ProjectAccess).values(
        project_id=p, user_id=ALICE, access_type="Write")],
    "department grant on a project": lambda _d, p: [insert(ProjectAccess).values(
        project_id=p, department_id=DEFAULT_DEPARTMENT, access_type="Read")],
    "account switched off": lambda _d, _p: [
        update(User.__table__).where(User.__table__.c.id == ALICE).values(is_active=False)],
    "home department": lambda d, _p: [
        text("UPDATE entity SET department_id = :d WHERE id = :u").bindparams(d=d, u=ALICE)],
}


@pytest.mark.parametrize("change", CHANGES)
def test_the_database_renews_the_version_whatever_path_changes_it(
        workers: Workers, change: str) -> None:
    project = _project(workers.first, workers.admin)
    before = _version(workers.first)
    with workers.first.app_context(), transaction():
        for statement in CHANGES[change](workers.elsewhere, project):
            db.session.execute(statement)  # type: ignore[call-overload]
    after = _version(workers.first)
    assert after != before, change


def test_taking_away_renews_it_too(workers: Workers) -> None:
    """Removing rows (and a role removed from the installation, cascading to its holders)
    renews the version as adding them does."""
    project = _project(workers.first, workers.admin)
    with workers.first.app_context(), transaction():
        db.session.execute(insert(UserRole).values(user_id=ALICE, role_name=ADMIN))
        db.session.execute(insert(ProjectAccess).values(
            project_id=project, department_id=DEFAULT_DEPARTMENT, access_type="Read"))
    for remove in (delete(ProjectAccess).where(ProjectAccess.project_id == project),
                   delete(Role).where(Role.name == ADMIN)):
        before = _version(workers.first)
        with workers.first.app_context(), transaction():
            db.session.execute(remove)
        assert _version(workers.first) != before


def test_changes_outside_the_actor_keep_the_version(workers: Workers) -> None:
    before = _version(workers.first)
    with workers.first.app_context(), transaction():
        db.session.execute(update(User.__table__).where(User.__table__.c.id == ALICE)
                           .values(email="alice@example.org"))
        db.session.execute(text("UPDATE entity SET name = 'renamed' WHERE id = :s")
                           .bindparams(s=workers.sample))
    assert _version(workers.first) == before
