"""Signing in with a directory password (decisions §19, docs/decisions/ldap-sign-in.md),
against a real slapd: the API, the login page and Basic auth, and every refusal."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from labapp.auth import ldap
from labapp.db import db
from labapp.model import LoginFailure, User
from tests.auth.checks import problem
from tests.conftest import (
    ADMIN_PASSWORD,
    DEFAULT_DEPARTMENT,
    PASSWORD,
    basic_header,
    bearer_header,
)
from tests.directory.conftest import Settings, directory_settings
from tests.helpers.directory import Directory, Person, running_directory
from tests.helpers.pages import page_login


def api_login(client: FlaskClient, username: str, password: str):
    return client.post("/api/auth/login", json={"username": username, "password": password})


def stored(app: Flask, username: str) -> User | None:
    with app.app_context():
        return db.session.get(User, username)


def profile(client: FlaskClient, token: str) -> dict:
    response = client.get("/api/user", headers=bearer_header(token))
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def test_a_directory_user_is_created_at_first_sign_in_with_mapped_department_and_roles(
        app: Flask, client: FlaskClient, ldap_on: Directory, chemistry: str) -> None:
    ada = ldap_on.people["ada"]

    response = api_login(client, "ada", ada.password)

    assert response.status_code == 200, response.get_json()
    me = profile(client, response.get_json()["accessToken"])
    assert me["id"] == "ada"
    assert me["name"] == "Ada Lovelace"
    assert me["email"] == "ada@example.org"
    assert me["departmentID"] == chemistry
    assert me["roles"] == ["ADMIN"]
    assert me["authSource"] == "ldap"
    assert "externalID" not in me
    user = stored(app, "ada")
    assert user is not None
    assert user.external_id == ada.dn
    assert user.password_hash == ldap.NO_LOCAL_PASSWORD


def test_the_login_page_signs_in_a_directory_user(app: Flask, ldap_on: Directory) -> None:
    client = app.test_client()

    response = page_login(client, "grace", ldap_on.people["grace"].password)

    assert response.status_code == 303
    user = stored(app, "grace")
    assert user is not None and user.auth_source == "ldap"
    assert user.roles == ["DATA_MANAGER"]
    assert user.department_id == DEFAULT_DEPARTMENT  # no mapping applies: the first one
    assert client.get("/admin/users").status_code == 403  # signed in, not an administrator


def test_a_second_sign_in_brings_the_user_in_line_with_the_directory(
        app: Flask, client: FlaskClient, person: Callable[..., Person],
        ldap_on: Directory, chemistry: str) -> None:
    someone = person()
    assert api_login(client, someone.uid, someone.password).status_code == 200
    ldap_on.modify_person(someone.uid, {"cn": ["Renamed Person"], "mail": ["new@example.org"]})
    ldap_on.set_groups(someone.uid, ("lab-admins", "chemistry"))

    assert api_login(client, someone.uid, someone.password).status_code == 200

    user = stored(app, someone.uid)
    assert user is not None
    assert (user.name, user.email) == ("Renamed Person", "new@example.org")
    assert (user.roles, user.department_id) == (["ADMIN"], chemistry)


def test_a_wrong_directory_password_is_refused_and_counted(
        app: Flask, client: FlaskClient, ldap_on: Directory) -> None:
    problem(api_login(client, "linus", "not-his-password"), 401, "invalid_credentials")

    assert stored(app, "linus") is None
    with app.app_context():
        assert db.session.query(LoginFailure).filter_by(username="linus").count() == 1


def test_an_empty_password_never_reaches_the_directory_as_an_unauthenticated_bind(
        app: Flask, ldap_on: Directory) -> None:
    with app.app_context(), pytest.raises(ldap.DirectoryRefused):
        ldap.authenticate("linus", "")


def test_an_unknown_username_is_refused(client: FlaskClient, ldap_on: Directory) -> None:
    problem(api_login(client, "nobody", PASSWORD), 401, "invalid_credentials")


def test_a_user_removed_from_the_directory_can_no_longer_sign_in(
        app: Flask, client: FlaskClient, person: Callable[..., Person],
        ldap_on: Directory) -> None:
    someone = person()
    assert api_login(client, someone.uid, someone.password).status_code == 200

    ldap_on.remove_person(someone.uid)

    problem(api_login(client, someone.uid, someone.password), 401, "invalid_credentials")
    problem(client.get("/api/user", headers=basic_header(someone.uid, someone.password)),
            401, "invalid_credentials")


def test_a_user_locked_in_the_directory_is_refused(
        app: Flask, client: FlaskClient, person: Callable[..., Person], settings: Settings,
        ldap_on: Directory) -> None:
    # Locking as Active Directory does it: the filter leaves disabled accounts out.
    settings.set(LDAP_USER_FILTER="(&(uid={username})(!(employeeType=locked)))")
    someone = person()
    assert api_login(client, someone.uid, someone.password).status_code == 200

    ldap_on.modify_person(someone.uid, {"employeeType": ["locked"]})

    problem(api_login(client, someone.uid, someone.password), 401, "invalid_credentials")


def test_a_directory_user_deactivated_here_cannot_sign_in(
        app: Flask, client: FlaskClient, person: Callable[..., Person],
        admin, ldap_on: Directory) -> None:
    someone = person()
    assert api_login(client, someone.uid, someone.password).status_code == 200
    assert admin.put("/api/user", json={"userID": someone.uid,
                                        "isActive": False}).status_code == 200

    problem(api_login(client, someone.uid, someone.password), 401, "invalid_credentials")
    assert stored(app, someone.uid).is_active is False


def test_a_password_an_administrator_sets_for_a_directory_user_is_not_theirs(
        app: Flask, client: FlaskClient, person: Callable[..., Person],
        admin, ldap_on: Directory) -> None:
    someone = person()
    assert api_login(client, someone.uid, someone.password).status_code == 200
    assert admin.put("/api/user", json={"userID": someone.uid,
                                        "password": "a-local-password-1"}).status_code == 200

    problem(api_login(client, someone.uid, "a-local-password-1"), 401, "invalid_credentials")
    assert api_login(client, someone.uid, someone.password).status_code == 200
    assert stored(app, someone.uid).password_hash == ldap.NO_LOCAL_PASSWORD


def test_a_directory_user_changes_their_password_in_the_directory_not_here(
        app: Flask, client: FlaskClient, person: Callable[..., Person],
        ldap_on: Directory) -> None:
    someone = person()
    token = api_login(client, someone.uid, someone.password).get_json()["accessToken"]

    body = problem(client.post("/api/user/password/change", headers=bearer_header(token),
                               json={"password": "another-password-1",
                                     "repeatPassword": "another-password-1",
                                     "confirmPassword": someone.password}),
                   400, "invalid_input")

    assert "your directory" in body["detail"]
    with app.app_context():  # not a wrong current password: nothing counted
        assert db.session.query(LoginFailure).filter_by(username=someone.uid).count() == 0
    assert api_login(client, someone.uid, someone.password).status_code == 200


def test_unknown_users_are_refused_when_creation_is_off(
        app: Flask, client: FlaskClient, settings: Settings, ldap_on: Directory) -> None:
    settings.set(LDAP_CREATE_USERS=False)

    problem(api_login(client, "linus", ldap_on.people["linus"].password), 401,
            "invalid_credentials")
    assert stored(app, "linus") is None


def test_a_local_user_keeps_the_local_password_whatever_the_directory_says(
        app: Flask, client: FlaskClient, make_user: Callable[..., str],
        ldap_on: Directory) -> None:
    make_user("linus")  # a local account of the same username as a directory person

    assert api_login(client, "linus", PASSWORD).status_code == 200
    problem(api_login(client, "linus", ldap_on.people["linus"].password), 401,
            "invalid_credentials")
    assert stored(app, "linus").auth_source == "local"


def test_basic_auth_with_a_directory_password(
        app: Flask, person: Callable[..., Person], ldap_on: Directory) -> None:
    someone = person(groups=("data-managers",))
    client = app.test_client(use_cookies=False)

    first = client.get("/api/user", headers=basic_header(someone.uid, someone.password))
    again = client.get("/api/user", headers=basic_header(someone.uid, someone.password))

    assert first.status_code == 200, first.get_json()
    assert first.get_json()["authSource"] == "ldap"
    assert first.get_json()["roles"] == ["DATA_MANAGER"]
    assert again.status_code == 200
    problem(client.get("/api/user", headers=basic_header(someone.uid, "wrong")), 401,
            "invalid_credentials")


INJECTIONS = ["*", "*)(uid=*", "ada)(uid=*", "*)(|(uid=*", "ada*", "a\\", "\\2a",
              "ada\x00", "(uid=ada)", "ada)(objectClass=*"]


@pytest.mark.parametrize("username", INJECTIONS)
def test_ldap_injection_in_the_username_is_refused(
        app: Flask, client: FlaskClient, ldap_on: Directory, username: str) -> None:
    # The password of a real person: a filter widened by the username would find her.
    response = api_login(client, username, ldap_on.people["ada"].password)

    assert response.status_code in {400, 401}, response.get_json()
    assert stored(app, "ada") is None


def test_usernames_are_escaped_in_the_filter(app: Flask, ldap_on: Directory) -> None:
    with app.app_context():
        config = ldap.settings()
        assert config is not None
        made = ldap._search_filter(config, "*)(uid=*\\\x00")

    assert made == "(uid=\\2a\\29\\28uid=\\2a\\5c\\00)"


def test_a_directory_that_does_not_answer_is_said_so_and_the_local_admin_still_signs_in(
        app: Flask, tmp_path: Path, settings: Settings, chemistry: str) -> None:
    client = app.test_client()
    with running_directory(tmp_path / "slapd") as directory:
        settings.set(**directory_settings(directory, chemistry))
        ada = directory.people["ada"]
        assert api_login(client, "ada", ada.password).status_code == 200

        directory.stop()

        body = problem(api_login(client, "ada", ada.password), 503, "directory_unavailable")
        assert f"The directory at {directory.url} does not answer" in body["detail"]
        page = page_login(app.test_client(), "ada", ada.password)
        assert page.status_code == 503
        assert "does not answer" in page.get_data(as_text=True)
        assert api_login(client, "admin", ADMIN_PASSWORD).status_code == 200
        assert page_login(app.test_client(), "admin", ADMIN_PASSWORD).status_code == 303
    with app.app_context():  # an outage is not a failed attempt of the user
        assert db.session.query(LoginFailure).filter_by(username="ada").count() == 0


def test_a_wrong_reader_password_is_an_unavailable_directory(
        client: FlaskClient, settings: Settings, ldap_on: Directory) -> None:
    settings.set(LDAP_BIND_PASSWORD="not-the-reader-password")

    body = problem(api_login(client, "ada", ldap_on.people["ada"].password), 503,
                   "directory_unavailable")
    assert "refused labapp's own bind" in body["detail"]


def test_directory_sign_ins_reach_the_sign_in_log_as_ldap(
        app: Flask, client: FlaskClient, ldap_on: Directory) -> None:
    """Issue 35 §5: a password the directory checked is logged with method ``ldap``, a
    success and a refusal alike; local passwords stay ``password``."""
    problem(api_login(client, "linus", "not-his-password"), 401, "invalid_credentials")
    assert api_login(client, "linus", ldap_on.people["linus"].password).status_code == 200
    assert api_login(client, "admin", ADMIN_PASSWORD).status_code == 200
    events = client.get("/api/auth/signins", headers=basic_header("admin", ADMIN_PASSWORD))
    assert events.status_code == 200, events.get_json()
    seen = [(event["username"], event["method"], event["succeeded"])
            for event in events.get_json()["items"]]
    assert seen[:3] == [("admin", "password", True), ("linus", "ldap", True),
                        ("linus", "ldap", False)]
