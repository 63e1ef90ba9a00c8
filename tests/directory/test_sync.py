"""``flask users sync``: directory users created, updated and deactivated (never deleted) as
the directory says, dry runs, the runs recorded, and what a deactivation stops (HTTP)."""
from __future__ import annotations

from collections.abc import Callable

import pytest
from flask import Flask
from flask.testing import FlaskCliRunner
from sqlalchemy import select, update

from labapp.auth import ldap
from labapp.db import db, transaction
from labapp.model import DirectorySync, User
from labapp.users import directory
from labapp.worker import lanes
from tests.auth.checks import problem
from tests.conftest import DEFAULT_DEPARTMENT, basic_header, bearer_header, login
from tests.directory.conftest import Settings, directory_settings
from tests.helpers.directory import Directory, Person, group_dn


def sync(runner: FlaskCliRunner, *options: str) -> str:
    result = runner.invoke(args=["users", "sync", *options])
    assert result.exit_code == 0, result.output
    return result.output


def user(app: Flask, username: str) -> User | None:
    with app.app_context():
        return db.session.get(User, username)


def last_run(app: Flask) -> DirectorySync:
    with app.app_context():
        return directory.recent_runs(1)[0]


def test_a_dry_run_says_what_it_would_do_and_changes_nothing(
        app: Flask, runner: FlaskCliRunner, ldap_on: Directory) -> None:
    output = sync(runner, "--dry-run")

    assert "create     ada: " in output
    assert "create     grace: " in output
    assert "would be created" in output and "dry run: nothing changed" in output
    assert user(app, "ada") is None
    run = last_run(app)
    assert run.dry_run is True
    assert run.created >= 3
    assert {change["username"] for change in run.changes
            if change["action"] == "create"} >= {"ada", "grace", "linus"}


def test_a_sync_creates_the_directory_users_with_their_departments_and_roles(
        app: Flask, runner: FlaskCliRunner, ldap_on: Directory, chemistry: str) -> None:
    output = sync(runner)

    assert "create     ada: " in output
    ada, grace = user(app, "ada"), user(app, "grace")
    assert ada is not None and grace is not None
    assert (ada.auth_source, ada.external_id, ada.is_active) == ("ldap", ldap_on.people[
        "ada"].dn, True)
    assert (ada.department_id, ada.roles) == (chemistry, ["ADMIN"])
    assert (grace.department_id, grace.roles) == (DEFAULT_DEPARTMENT, ["DATA_MANAGER"])
    assert ada.password_hash == ldap.NO_LOCAL_PASSWORD
    run = last_run(app)
    assert (run.dry_run, run.error) == (False, None)
    assert run.finished_utc >= run.started_utc

    again = sync(runner)

    assert "0 created, 0 updated, 0 deactivated" in again


def test_a_sync_updates_names_emails_roles_and_departments(
        app: Flask, runner: FlaskCliRunner, person: Callable[..., Person],
        ldap_on: Directory, chemistry: str) -> None:
    someone = person(groups=("data-managers",))
    sync(runner)
    ldap_on.modify_person(someone.uid, {"cn": ["New Name"], "mail": ["new@example.org"]})
    ldap_on.set_groups(someone.uid, ("lab-admins", "chemistry"))

    output = sync(runner)

    assert f"update     {someone.uid}: " in output
    assert "'New Name'" in output
    changed = user(app, someone.uid)
    assert changed is not None
    assert (changed.name, changed.email) == ("New Name", "new@example.org")
    assert (changed.roles, changed.department_id) == (["ADMIN"], chemistry)
    update = next(change for change in last_run(app).changes
                  if change["username"] == someone.uid)
    assert update["action"] == "update"
    assert update["detail"]["roles"] == [["DATA_MANAGER"], ["ADMIN"]]


def test_a_user_gone_from_the_directory_is_deactivated_never_deleted_and_stopped(
        app: Flask, runner: FlaskCliRunner, person: Callable[..., Person],
        ldap_on: Directory) -> None:
    someone = person()
    client = app.test_client()
    tokens = login(client, someone.uid, someone.password)
    made = client.post("/api/user/pat", json={"name": "script"},
                       headers=bearer_header(tokens["accessToken"]))
    assert made.status_code == 201, made.get_json()
    pat = made.get_json()["value"]
    other = app.test_client(use_cookies=False)
    assert other.get("/api/user", headers=basic_header(someone.uid, pat)).status_code == 200
    ldap_on.remove_person(someone.uid)

    dry = sync(runner, "--dry-run")
    assert f"deactivate {someone.uid}: no longer in the directory" in dry
    assert user(app, someone.uid).is_active is True

    output = sync(runner)

    assert f"deactivate {someone.uid}: no longer in the directory" in output
    kept = user(app, someone.uid)
    assert kept is not None and kept.is_active is False and kept.status == "Inactive"
    problem(other.get("/api/user", headers=basic_header(someone.uid, pat)), 401,
            "invalid_credentials")
    assert other.get("/api/user",
                     headers=bearer_header(tokens["accessToken"])).status_code == 401
    refreshed = other.post("/api/auth/refresh", json={"refreshToken": tokens["refreshToken"]})
    assert refreshed.status_code == 401
    assert client.get("/api/user").status_code == 401  # the browser cookie too


def test_a_directory_entry_never_takes_over_a_local_user(
        app: Flask, runner: FlaskCliRunner, make_user: Callable[..., str],
        ldap_on: Directory) -> None:
    make_user("linus")

    output = sync(runner)

    assert "skip       linus: the username belongs to a local user" in output
    assert user(app, "linus").auth_source == "local"


def test_a_directory_that_does_not_answer_fails_the_sync_and_is_recorded(
        app: Flask, runner: FlaskCliRunner, settings: Settings, ldap_on: Directory) -> None:
    settings.set(LDAP_URL="ldap://127.0.0.1:1")

    result = runner.invoke(args=["users", "sync"])

    assert result.exit_code != 0
    assert "The directory at ldap://127.0.0.1:1 does not answer" in result.output
    run = last_run(app)
    assert run.error is not None and "does not answer" in run.error


def test_the_sync_needs_ldap(runner: FlaskCliRunner) -> None:
    result = runner.invoke(args=["users", "sync"])

    assert result.exit_code != 0
    assert "LDAP is not configured" in result.output


def test_the_worker_syncs_on_the_schedule_setting(
        app: Flask, settings: Settings, ldap_on: Directory) -> None:
    def jobs() -> dict[str, float]:
        return {job.name: job.every for lane in lanes(app) for job in lane.jobs}

    assert "directory sync" not in jobs()  # DIRECTORY_SYNC_MINUTES = 0: off
    settings.set(DIRECTORY_SYNC_MINUTES=15)
    assert jobs()["directory sync"] == 15 * 60

    with app.app_context():
        assert directory.scheduled_sync() is True
        assert directory.scheduled_sync() is False  # nothing left to change
        runs = db.session.scalars(select(DirectorySync)).all()
    assert len(runs) == 2
    assert user(app, "ada") is not None


def test_the_worker_waits_for_a_directory_that_does_not_answer(
        app: Flask, settings: Settings, ldap_on: Directory,
        caplog: pytest.LogCaptureFixture) -> None:
    settings.set(LDAP_URL="ldap://127.0.0.1:1")

    with app.app_context():
        assert directory.scheduled_sync() is False

    assert "does not answer" in last_run(app).error
    assert "directory sync: The directory at ldap://127.0.0.1:1 does not answer" in caplog.text


def test_a_mapping_to_no_department_falls_through_to_the_department_attribute(
        app: Flask, runner: FlaskCliRunner, settings: Settings, ldap_on: Directory,
        department: Callable[..., str]) -> None:
    named = department("CHEM")  # ada's departmentNumber names it
    settings.set(LDAP_GROUP_DEPARTMENTS={"cn=chemistry,ou=groups,dc=example,dc=org": "NOPE"})

    sync(runner)

    assert user(app, "ada").department_id == named
    assert user(app, "linus").department_id == DEFAULT_DEPARTMENT


def test_the_directory_never_takes_the_last_administrator_away(
        fresh_app: Callable[..., Flask], slapd: Directory,
        directory_person: Callable[..., Person]) -> None:
    """The one active administrator is a directory user: neither the sync nor a sign-in
    takes ADMIN from them when their group goes, nor does the sync deactivate them when
    they leave the directory; each time the run says so. Once another administrator is
    active again, the directory has its way."""
    admin_group = "biology"  # no one else's group: this person is the directory's only admin
    someone = directory_person(groups=(admin_group,))
    settings = {**directory_settings(slapd, DEFAULT_DEPARTMENT),
                "LDAP_GROUP_ROLES": {group_dn(admin_group): "ADMIN"}}
    app = fresh_app(initialised=True, **settings)
    runner = app.test_cli_runner()
    sync(runner)
    assert user(app, someone.uid).roles == ["ADMIN"]
    set_active(app, "admin", False)

    slapd.set_groups(someone.uid, ())
    output = sync(runner)
    assert f"keep       {someone.uid}: keeps ADMIN, the last active administrator" in output
    assert user(app, someone.uid).roles == ["ADMIN"]
    assert any(change == {"action": "keep", "username": someone.uid,
                          "detail": f"keeps ADMIN, {directory.LAST_ADMIN}"}
               for change in last_run(app).changes)
    signed_in = app.test_client().post("/api/auth/login", json={
        "username": someone.uid, "password": someone.password})
    assert signed_in.status_code == 200, signed_in.get_json()
    assert user(app, someone.uid).roles == ["ADMIN"]

    slapd.remove_person(someone.uid)
    output = sync(runner)
    assert f"keep       {someone.uid}: no longer in the directory but kept active" in output
    kept = user(app, someone.uid)
    assert kept is not None and kept.is_active is True and kept.roles == ["ADMIN"]

    set_active(app, "admin", True)
    output = sync(runner)
    assert f"deactivate {someone.uid}: no longer in the directory" in output
    assert user(app, someone.uid).is_active is False


def set_active(app: Flask, user_id: str, active: bool) -> None:
    """Switch a user on or off directly in the database (no guard: the test sets the scene)."""
    with app.app_context():
        try:
            with transaction():
                db.session.execute(update(User).where(User.id == user_id)
                                   .values(is_active=active))
        finally:
            db.session.remove()
