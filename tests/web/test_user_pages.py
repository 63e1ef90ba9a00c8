"""The users and roles pages through the test client: list, create, edit, deactivate,
password reset and roles, ADMIN only, with the service's refusals shown where they happen."""
from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from flask import Flask
from flask.testing import FlaskClient

from labapp.db import db
from labapp.model import User
from tests.conftest import ADMIN_PASSWORD, DEFAULT_DEPARTMENT, PASSWORD, ApiClient
from tests.helpers.pages import HTMX, page_login, post_form
from tests.web.conftest import html_of, save

NEW_PASSWORD = "a fresh password for bob"


@pytest.fixture
def admin(client: FlaskClient) -> FlaskClient:
    assert page_login(client, "admin", ADMIN_PASSWORD).status_code == 303
    return client


@pytest.fixture
def admin_api(api_as) -> ApiClient:
    return api_as("admin", password=ADMIN_PASSWORD)


@pytest.fixture
def lab(admin_api) -> str:
    """A second department, Microbiology."""
    return save(admin_api, {"eClass": "Department", "name": "Microbiology"})[0]["id"]


@pytest.fixture
def bob(make_user) -> str:
    return make_user("bob", name="Bob Builder")


def stored(app: Flask, user_id: str) -> User:
    with app.app_context():
        user = db.session.get(User, user_id)
        db.session.expunge(user)
        return user


def can_log_in(app: Flask, username: str, password: str = PASSWORD) -> bool:
    response = app.test_client().post("/api/auth/login",
                                      json={"username": username, "password": password})
    return response.status_code == 200


def error_of(html: str, field: str) -> str:
    match = re.search(rf'<p class="field-error" id="{field}-error">([^<]*)</p>', html)
    assert match, f"no error on {field}"
    return match.group(1)


# ---- Who may ----------------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["/admin/users", "/admin/users/admin"])
def test_pages_require_login(client, path):
    response = client.get(path)
    assert response.status_code == 302
    assert parse_qs(urlsplit(response.headers["Location"]).query) == {"next": [path]}


@pytest.mark.parametrize("roles", [(), ("DATA_MANAGER",), ("DATA_MANAGER_PROJECT_WRITE",)])
def test_only_admin_may_administer_users(app, make_user, bob, roles):
    client = app.test_client()
    make_user("dora", roles=list(roles))
    page_login(client, "dora")
    assert client.get("/admin/users").status_code == 403
    assert client.get(f"/admin/users/{bob}").status_code == 403
    for path, data in ((f"/admin/users/{bob}/active", {"active": "false"}),
                       (f"/admin/users/{bob}/roles/assign", {"role": "ADMIN"}),
                       (f"/admin/users/{bob}/password", {"password": NEW_PASSWORD}),
                       ("/admin/users", {"username": "eve", "password": NEW_PASSWORD})):
        assert post_form(client, path, data).status_code == 403
    assert stored(app, bob).is_active and stored(app, bob).roles == []
    assert client.get("/admin").status_code == (403 if not roles else 200)
    assert 'id="admin-users"' not in html_of(client.get("/admin"))


def test_unknown_user_is_a_404_page(admin):
    assert admin.get("/admin/users/nobody").status_code == 404
    assert post_form(admin, "/admin/users/nobody", {"name": "X"}).status_code == 404


# ---- List and create --------------------------------------------------------------------------

def test_list_shows_users_with_department_roles_and_state(admin, bob):
    html = html_of(admin.get("/admin/users"))
    row = re.search(r'<tr id="user-admin">.*?</tr>', html, re.S).group(0)
    assert "Administration" in row and '<span class="badge">ADMIN</span>' in row
    assert ">yes</td>" in row
    assert "Bob Builder" in html and 'href="/admin/users/bob"' in html
    assert f'<option value="{DEFAULT_DEPARTMENT}" selected>' in html


def test_create_a_user_who_can_log_in(app, admin, lab):
    response = post_form(admin, "/admin/users", {
        "username": "carol", "name": "Carol King", "email": "carol@example.org",
        "department": lab, "password": NEW_PASSWORD})
    assert response.status_code == 303 and response.headers["Location"] == "/admin/users/carol"
    assert "User carol created." in html_of(admin.get("/admin/users/carol"))
    user = stored(app, "carol")
    assert (user.name, user.email, user.department_id) == ("Carol King", "carol@example.org",
                                                           lab)
    assert user.created_by == "admin" and can_log_in(app, "carol", NEW_PASSWORD)


@pytest.mark.parametrize(("data", "field", "status"), [
    ({"username": "dave smith"}, "new-username", 400),
    ({"username": ""}, "new-username", 400),
    ({"username": "dave", "password": "short"}, "new-password", 400),
    ({"username": "dave", "department": "DEP99999"}, "new-department", 400),
    ({"username": "bob"}, "new-username", 409),
])
def test_bad_new_users_are_shown_inline(app, admin, bob, data, field, status):
    form = {"name": "Dave", "department": DEFAULT_DEPARTMENT, "password": NEW_PASSWORD, **data}
    response = post_form(admin, "/admin/users", form)
    html = html_of(response)
    assert response.status_code == status
    assert error_of(html, field)
    assert 'value="Dave"' in html, "the form keeps what was typed"
    assert stored(app, bob).name == "Bob Builder", "an existing user is never overwritten"
    with app.app_context():
        assert db.session.get(User, "dave") is None


# ---- Edit -------------------------------------------------------------------------------------

def test_edit_profile_department_and_state(app, admin, bob, lab):
    html = html_of(admin.get(f"/admin/users/{bob}"))
    assert 'id="user-name" name="name" type="text" value="Bob Builder"' in html
    response = post_form(admin, f"/admin/users/{bob}", {
        "name": "Robert Builder", "email": "bob@example.org", "initials": "RB",
        "department": lab})
    assert response.status_code == 303
    assert "User bob saved." in html_of(admin.get(f"/admin/users/{bob}"))
    user = stored(app, bob)
    assert (user.name, user.email, user.initials, user.department_id, user.is_active) == (
        "Robert Builder", "bob@example.org", "RB", lab, False)
    assert not can_log_in(app, bob)

    post_form(admin, f"/admin/users/{bob}", {"name": "Robert Builder", "email": "",
                                             "initials": "RB", "department": lab,
                                             "active": "true"})
    assert stored(app, bob).email is None and can_log_in(app, bob)
    post_form(admin, f"/admin/users/{bob}", {"name": "Robert Builder", "initials": "RB",
                                             "department": lab, "active": "true"})
    assert "Nothing was changed." in html_of(admin.get(f"/admin/users/{bob}"))


@pytest.mark.parametrize(("data", "field"), [
    ({"name": ""}, "user-name"),
    ({"initials": "X" * 17}, "user-initials"),
    ({"department": "DEP99999"}, "user-department"),
    ({"department": ""}, "user-department"),
])
def test_bad_edits_are_shown_inline(app, admin, bob, data, field):
    form = {"name": "Bob", "department": DEFAULT_DEPARTMENT, "active": "true", **data}
    response = post_form(admin, f"/admin/users/{bob}", form)
    assert response.status_code == 400
    assert error_of(html_of(response), field)
    assert stored(app, bob).name == "Bob Builder"


def test_the_last_administrator_cannot_deactivate_themselves(app, admin):
    response = post_form(admin, "/admin/users/admin", {"name": "Administrator",
                                                       "department": DEFAULT_DEPARTMENT})
    html = html_of(response)
    assert response.status_code == 409
    assert 'id="user-error"' in html and "last active administrator" in html
    assert stored(app, "admin").is_active


def test_password_reset(app, admin, bob):
    short = post_form(admin, f"/admin/users/{bob}/password", {"password": "short"})
    assert short.status_code == 400
    assert "at least" in error_of(html_of(short), "new-password")
    response = post_form(admin, f"/admin/users/{bob}/password", {"password": NEW_PASSWORD})
    assert response.status_code == 303
    assert "The password of bob was reset" in html_of(admin.get(f"/admin/users/{bob}"))
    assert can_log_in(app, bob, NEW_PASSWORD) and not can_log_in(app, bob)


# ---- Deactivate and roles, in place -----------------------------------------------------------

def test_deactivate_and_reactivate_in_place(app, admin, bob):
    response = post_form(admin, f"/admin/users/{bob}/active", {"active": "false"}, headers=HTMX)
    html = html_of(response)
    assert response.status_code == 200 and "<html" not in html
    assert html.lstrip().startswith('<section class="card" id="users"')
    assert "User bob was deactivated." in html and '<tr id="user-bob" class="inactive">' in html
    assert not can_log_in(app, bob)
    plain = post_form(admin, f"/admin/users/{bob}/active", {"active": "true"})
    assert plain.status_code == 303 and plain.headers["Location"] == "/admin/users"
    assert can_log_in(app, bob)


def test_deactivating_the_last_administrator_is_refused_in_place(app, admin):
    response = post_form(admin, "/admin/users/admin/active", {"active": "false"}, headers=HTMX)
    html = html_of(response)
    assert response.status_code == 409 and "<html" not in html
    assert 'id="users-error"' in html and "last active administrator" in html
    assert stored(app, "admin").is_active


def test_assign_and_revoke_roles_in_place(app, admin, admin_api, bob):
    response = post_form(admin, f"/admin/users/{bob}/roles/assign", {"role": "DATA_MANAGER"},
                         headers=HTMX)
    html = html_of(response)
    assert response.status_code == 200 and "<html" not in html
    assert "bob now holds the role DATA_MANAGER." in html
    assert '<option value="DATA_MANAGER">' not in html, "held roles are not offered again"
    assert stored(app, bob).roles == ["DATA_MANAGER"]
    audit = admin_api.get(f"/api/entity/User/{bob}").get_json()["auditEvents"][0]
    assert audit["userID"] == "admin" and "roles" in audit["changes"]
    plain = post_form(admin, f"/admin/users/{bob}/roles/revoke", {"role": "DATA_MANAGER"})
    assert plain.status_code == 303 and plain.headers["Location"] == "/admin/users/bob"
    assert stored(app, bob).roles == []


SELF_DEACTIVATION = ("You are deactivating your own account: you will be logged out and "
                     "cannot log in again until another administrator reactivates you.")


def test_the_deactivate_confirm_says_what_deactivating_oneself_means(admin, bob):
    html = html_of(admin.get("/admin/users"))
    own = re.search(r'<tr id="user-admin">.*?</tr>', html, re.S).group()
    other = re.search(r'<tr id="user-bob">.*?</tr>', html, re.S).group()
    assert f'hx-confirm="{SELF_DEACTIVATION}"' in own
    assert 'hx-confirm="Deactivate bob? They can no longer log in in any way."' in other
    assert SELF_DEACTIVATION not in other
    assert 'id="user-active-self"' in html_of(admin.get("/admin/users/admin"))
    assert 'id="user-active-self"' not in html_of(admin.get(f"/admin/users/{bob}"))


def test_assign_a_role_preselects_nothing(app, admin, bob):
    html = html_of(admin.get(f"/admin/users/{bob}"))
    select = re.search(r'<select id="role"[^>]*>(.*?)</select>', html, re.S)
    assert select and "required" in select.group()[:select.group().index(">")]
    options = re.findall(r"<option[^>]*>[^<]*", select.group(1))
    assert options[0] == '<option value="" selected>Choose a role'
    assert not any("selected" in option for option in options[1:])
    response = post_form(admin, f"/admin/users/{bob}/roles/assign", {"role": ""}, headers=HTMX)
    assert response.status_code == 400 and "<html" not in html_of(response)
    assert 'id="roles-error"' in html_of(response) and "Choose a role." in html_of(response)
    assert stored(app, bob).roles == []


def test_unknown_role_is_shown_in_place(app, admin, bob):
    response = post_form(admin, f"/admin/users/{bob}/roles/assign", {"role": "OVERLORD"},
                         headers=HTMX)
    assert response.status_code == 400 and "<html" not in html_of(response)
    assert 'id="roles-error"' in html_of(response) and "Unknown role" in html_of(response)


def test_revoking_admin_from_the_last_administrator_is_refused(app, admin, bob):
    response = post_form(admin, "/admin/users/admin/roles/revoke", {"role": "ADMIN"},
                         headers=HTMX)
    html = html_of(response)
    assert response.status_code == 409 and "<html" not in html
    assert 'id="roles-error"' in html and "last active administrator" in html
    assert stored(app, "admin").roles == ["ADMIN"]
    post_form(admin, f"/admin/users/{bob}/roles/assign", {"role": "ADMIN"})
    assert post_form(admin, "/admin/users/admin/roles/revoke",
                     {"role": "ADMIN"}).status_code == 303
    assert stored(app, "admin").roles == []
