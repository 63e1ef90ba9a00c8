"""The administration pages of access through the test client: the overview, departments and
projects with their grants, the suggest box, deleting, and who may see and do what."""
from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import parse_qs, urlsplit

import pytest
from flask.testing import FlaskClient

from labapp.db import db, transaction
from labapp.model import User
from tests.conftest import ADMIN_PASSWORD, DEFAULT_DEPARTMENT, ApiClient
from tests.helpers.pages import HTMX, page_login, post_form
from tests.web.conftest import html_of, save

ADMIN, DM, DMPW = "ADMIN", "DATA_MANAGER", "DATA_MANAGER_PROJECT_WRITE"
DEPARTMENT_PAGE = f"/admin/departments/{DEFAULT_DEPARTMENT}/access"


@pytest.fixture
def sign_in(app, make_user) -> Callable[..., FlaskClient]:
    """Factory: a client logged in through the form as a new user holding ``roles``, or as
    the administrator for ``"admin"``."""

    def make(username: str, *roles: str, department_id: str = DEFAULT_DEPARTMENT) -> FlaskClient:
        client = app.test_client()
        if username == "admin":
            assert page_login(client, "admin", ADMIN_PASSWORD).status_code == 303
        else:
            make_user(username, roles=list(roles), department_id=department_id)
            assert page_login(client, username).status_code == 303
        return client

    return make


@pytest.fixture
def admin(sign_in) -> FlaskClient:
    return sign_in("admin")


@pytest.fixture
def admin_api(api_as) -> ApiClient:
    return api_as("admin", password=ADMIN_PASSWORD)


@pytest.fixture
def lab(admin_api) -> str:
    """A second department, Microbiology."""
    return save(admin_api, {"eClass": "Department", "name": "Microbiology"})[0]["id"]


@pytest.fixture
def project(admin_api) -> str:
    """A project of the default department."""
    return save(admin_api, {"eClass": "Project", "name": "Soil survey"})[0]["id"]


def grants_of(api: ApiClient, path: str) -> dict[str, str]:
    """``{grantee id: accessType}`` of the grants (not memberships) the API lists."""
    response = api.get(path)
    assert response.status_code == 200, response.get_json()
    return {entry["userID"] or entry.get("accessDepartmentID") or entry.get("departmentID"):
            entry["accessType"] for entry in response.get_json() if not entry.get("isMember")}


def row_of(html: str, kind: str, grantee: str, row: str = "grant") -> str:
    """The table row of a grant (or with ``row="member"`` a membership)."""
    match = re.search(rf'<tr id="{row}-{kind}-{grantee}">.*?</tr>', html, re.S)
    assert match, f"no {row} row for {kind} {grantee}"
    return match.group(0)


# ---- Login, scopes, navigation ----------------------------------------------------------------

@pytest.mark.parametrize("path", ["/admin", "/admin/departments", DEPARTMENT_PAGE,
                                  "/admin/projects", "/admin/grantees?grantee=a"])
def test_pages_require_login_and_come_back(client, path):
    response = client.get(path)
    assert response.status_code == 302
    location = urlsplit(response.headers["Location"])
    assert location.path == "/login" and parse_qs(location.query) == {"next": [path]}
    htmx = client.get(path, headers=HTMX)
    assert (htmx.status_code, htmx.headers["HX-Redirect"].split("?")[0]) == (204, "/login")


def test_posts_require_login(client):
    client.get("/login")
    response = post_form(client, DEPARTMENT_PAGE, {"grantee": "admin", "access_type": "Read"})
    assert response.status_code == 302
    assert response.headers["Location"] == "/login"


@pytest.mark.parametrize(("roles", "areas"), [
    ((ADMIN,), ["departments", "projects", "users", "exports"]),
    ((DM,), ["departments", "projects"]),
    ((DMPW,), ["projects"]),
])
def test_overview_and_nav_link_what_the_scopes_open(sign_in, roles, areas):
    client = sign_in("dora", *roles) if roles != (ADMIN,) else sign_in("admin")
    html = html_of(client.get("/admin"))
    assert re.findall(r'<section class="card" id="admin-(\w+)">', html) == areas
    assert '<a href="/admin" id="admin-link" aria-current="page">Admin</a>' in html
    assert 'id="admin-card-link"' in html_of(client.get("/"))


def test_overview_is_forbidden_without_a_scope(sign_in):
    client = sign_in("alice")
    response = client.get("/admin")
    assert response.status_code == 403
    assert "requires the scope" in html_of(response)
    home = html_of(client.get("/"))
    assert 'id="admin-link"' not in home and 'id="admin-card-link"' not in home


@pytest.mark.parametrize(("roles", "path", "status"), [
    ((), "/admin/departments", 403),
    ((DMPW,), "/admin/departments", 403),
    ((DMPW,), DEPARTMENT_PAGE, 403),
    ((DM,), "/admin/departments", 200),
    ((), "/admin/projects", 403),
    ((DM,), "/admin/projects", 200),
    ((DMPW,), "/admin/projects", 200),
])
def test_list_and_page_scopes(sign_in, roles, path, status):
    assert sign_in("dora", *roles).get(path).status_code == status


@pytest.mark.parametrize("roles", [(), (DMPW,)])
def test_department_changes_need_admin_or_data_manager(sign_in, admin_api, roles):
    client = sign_in("dora", *roles)
    for path in (DEPARTMENT_PAGE, f"{DEPARTMENT_PAGE}/remove",
                 f"/admin/departments/{DEFAULT_DEPARTMENT}/delete"):
        assert post_form(client, path, {"grantee": "dora", "access_type": "Read"}
                         ).status_code == 403
    assert grants_of(admin_api, f"/api/department/{DEFAULT_DEPARTMENT}/access") == {}


def test_unknown_department_or_project_is_a_404_page(admin):
    assert admin.get("/admin/departments/DEP99999/access").status_code == 404
    response = post_form(admin, "/admin/projects/PRJ99999/access",
                         {"grantee": "admin", "access_type": "Read"})
    assert response.status_code == 404
    assert "No project" in html_of(response)
    assert admin.get("/admin/elsewhere").status_code == 404


def test_posts_need_the_csrf_token(admin):
    response = admin.post(DEPARTMENT_PAGE, data={"grantee": "admin", "access_type": "Read"})
    assert response.status_code == 403
    assert "CSRF" in html_of(response)


# ---- Departments ------------------------------------------------------------------------------

def test_department_list_links_every_department(admin, lab):
    html = html_of(admin.get("/admin/departments"))
    assert f'href="{DEPARTMENT_PAGE}"' in html
    assert f'href="/admin/departments/{lab}/access"' in html and "Microbiology" in html


def test_department_page_shows_members_and_grant_form(admin, make_user):
    make_user("alice", name="Alice Liddell")
    html = html_of(admin.get(DEPARTMENT_PAGE))
    assert "Access to department Administration" in html
    member = row_of(html, "user", "alice", row="member")
    assert "Alice Liddell" in member and ">member</span>" in member and "Write" in member
    assert "<form" not in member, "membership comes from the home department"
    assert 'id="grant-user-alice"' not in html
    assert 'id="grant-form"' in html and 'id="delete-form"' in html


def test_grant_change_and_remove_without_javascript(admin, admin_api, make_user, lab):
    make_user("bob", department_id=lab)
    response = post_form(admin, DEPARTMENT_PAGE, {"grantee": "bob", "access_type": "Read"})
    assert response.status_code == 303 and response.headers["Location"] == DEPARTMENT_PAGE
    page = html_of(admin.get(DEPARTMENT_PAGE))
    assert "bob was granted Read access." in page
    assert '<option selected>Read</option>' in row_of(page, "user", "bob")

    post_form(admin, DEPARTMENT_PAGE, {"grantee": lab, "access_type": "Write"})
    post_form(admin, DEPARTMENT_PAGE, {"grantee": "bob", "access_type": "Write"})
    assert "The access of bob is now Write." in html_of(admin.get(DEPARTMENT_PAGE))
    api_path = f"/api/department/{DEFAULT_DEPARTMENT}/access"
    assert grants_of(admin_api, api_path) == {"bob": "Write", lab: "Write"}

    response = post_form(admin, f"{DEPARTMENT_PAGE}/remove", {"grantee": lab})
    assert response.status_code == 303
    assert grants_of(admin_api, api_path) == {"bob": "Write"}


def test_htmx_gets_only_the_access_block(sign_in, admin_api, make_user):
    client = sign_in("dora", DM)
    make_user("bob")
    response = post_form(client, DEPARTMENT_PAGE, {"grantee": "bob", "access_type": "Read"},
                         headers=HTMX)
    html = html_of(response)
    assert response.status_code == 200
    assert "<html" not in html and html.lstrip().startswith('<section class="card" id="access"')
    assert "bob was granted Read access." in html
    changed = post_form(client, DEPARTMENT_PAGE, {"grantee": "bob", "access_type": "Write"},
                        headers=HTMX)
    assert "<html" not in html_of(changed)
    assert '<option selected>Write</option>' in row_of(html_of(changed), "user", "bob")
    removed = post_form(client, f"{DEPARTMENT_PAGE}/remove", {"grantee": "bob"}, headers=HTMX)
    assert "<html" not in html_of(removed) and 'id="grant-user-bob"' not in html_of(removed)
    assert grants_of(admin_api, f"/api/department/{DEFAULT_DEPARTMENT}/access") == {}


@pytest.mark.parametrize(("data", "field", "message"), [
    ({"grantee": "  ", "access_type": "Read"}, "grantee", "Choose a user or a department."),
    ({"grantee": "nobody", "access_type": "Read"}, "grantee",
     "No user or department has the id “nobody”."),
    ({"grantee": "admin", "access_type": "Owner"}, "access-type", "Choose Read or Write."),
])
def test_bad_grants_are_shown_inline(admin, admin_api, data, field, message):
    response = post_form(admin, DEPARTMENT_PAGE, data, headers=HTMX)
    html = html_of(response)
    assert response.status_code == 400 and "<html" not in html
    assert f'<p class="field-error" id="{field}-error">{message}</p>' in html
    assert 'aria-invalid="true"' in html
    full = post_form(admin, DEPARTMENT_PAGE, data)
    assert full.status_code == 400 and "<html" in html_of(full)
    assert grants_of(admin_api, f"/api/department/{DEFAULT_DEPARTMENT}/access") == {}


def test_removing_a_missing_grant_is_explained(admin):
    response = post_form(admin, f"{DEPARTMENT_PAGE}/remove", {"grantee": "admin"}, headers=HTMX)
    assert response.status_code == 400
    assert 'id="access-error"' in html_of(response) and "No grant" in html_of(response)


def test_delete_department_in_use_is_refused_then_forced(admin, admin_api, make_user, lab):
    make_user("bob", department_id=lab)
    path = f"/admin/departments/{lab}/delete"
    refused = post_form(admin, path)
    html = html_of(refused)
    assert refused.status_code == 409
    assert 'id="delete-error"' in html and "still owns or is referenced by entities" in html
    assert 'id="delete-force"' in html
    forced = post_form(admin, path, {"force": "true"})
    assert forced.status_code == 303 and forced.headers["Location"] == "/admin/departments"
    assert f"Department {lab} was deleted." in html_of(admin.get("/admin/departments"))
    assert admin_api.get(f"/api/entity/Department/{lab}").status_code == 404


def test_data_manager_deletes_an_empty_department_but_may_not_force(sign_in, admin_api):
    client = sign_in("dora", DM)
    empty, used = (save(admin_api, {"eClass": "Department", "name": name})[0]["id"]
                   for name in ("Empty", "Used"))
    save(admin_api, {"eClass": "Sample", "departmentID": used})
    assert 'id="delete-force"' not in html_of(client.get(f"/admin/departments/{used}/access"))
    assert post_form(client, f"/admin/departments/{used}/delete").status_code == 409
    assert post_form(client, f"/admin/departments/{used}/delete",
                     {"force": "true"}).status_code == 403
    assert post_form(client, f"/admin/departments/{empty}/delete").status_code == 303
    assert admin_api.get(f"/api/entity/Department/{empty}").status_code == 404


# ---- Projects ---------------------------------------------------------------------------------

def test_admin_grants_on_a_project(admin, admin_api, project, lab):
    page = f"/admin/projects/{project}/access"
    assert f'href="{page}"' in html_of(admin.get("/admin/projects"))
    assert "Nobody has access through a grant." in html_of(admin.get(page))
    post_form(admin, page, {"grantee": lab, "access_type": "Read"})
    post_form(admin, page, {"grantee": "admin", "access_type": "Write"})
    html = html_of(admin.get(page))
    assert "Access to project Soil survey" in html
    assert "Microbiology" in row_of(html, "department", lab)
    assert grants_of(admin_api, f"/api/project/{project}/rls") == {lab: "Read", "admin": "Write"}
    post_form(admin, f"{page}/remove", {"grantee": lab})
    assert grants_of(admin_api, f"/api/project/{project}/rls") == {"admin": "Write"}


def test_data_manager_sees_project_grants_read_only(sign_in, admin, project, lab):
    page = f"/admin/projects/{project}/access"
    post_form(admin, page, {"grantee": lab, "access_type": "Read"})
    client = sign_in("dora", DM)
    html = html_of(client.get(page))
    row = row_of(html, "department", lab)
    assert "Read" in row and "<form" not in row
    assert 'id="grant-form"' not in html and 'id="delete-form"' not in html
    for path in (page, f"{page}/remove", f"/admin/projects/{project}/delete"):
        assert post_form(client, path, {"grantee": lab, "access_type": "Write"}
                         ).status_code == 403


def test_project_writer_changes_grants_without_listing_them(sign_in, admin_api, project, lab):
    page = f"/admin/projects/{project}/access"
    client = sign_in("dora", DMPW)
    html = html_of(client.get(page))
    assert 'id="grants-hidden"' in html and 'id="access-table"' not in html
    assert 'id="grant-form"' in html and 'id="remove-form"' in html
    granted = post_form(client, page, {"grantee": lab, "access_type": "Write"}, headers=HTMX)
    assert granted.status_code == 200 and "was granted Write access" in html_of(granted)
    assert 'id="access-table"' not in html_of(granted)
    assert grants_of(admin_api, f"/api/project/{project}/rls") == {lab: "Write"}
    post_form(client, f"{page}/remove", {"grantee": lab})
    assert grants_of(admin_api, f"/api/project/{project}/rls") == {}


def test_project_list_follows_the_visibility_rule(sign_in, admin_api, lab, project):
    hidden = save(admin_api, {"eClass": "Project", "name": "Elsewhere",
                              "departmentID": lab})[0]["id"]
    client = sign_in("dora", DM)
    html = html_of(client.get("/admin/projects"))
    assert f"/admin/projects/{project}/access" in html
    assert f"/admin/projects/{hidden}/access" not in html
    page = html_of(client.get(f"/admin/projects/{hidden}/access"))
    assert f"Access to project {hidden}</h1>" in page and "Elsewhere" not in page


def test_delete_project_in_use_then_empty(admin, admin_api, project):
    save(admin_api, {"eClass": "Sample", "projectID": project})
    refused = post_form(admin, f"/admin/projects/{project}/delete")
    assert refused.status_code == 409 and 'id="delete-error"' in html_of(refused)
    empty = save(admin_api, {"eClass": "Project", "name": "Unused"})[0]["id"]
    deleted = post_form(admin, f"/admin/projects/{empty}/delete")
    assert deleted.status_code == 303 and deleted.headers["Location"] == "/admin/projects"


# ---- Suggestions ------------------------------------------------------------------------------

def test_suggestions_find_users_and_departments_for_anyone(app, sign_in, make_user, lab):
    client = sign_in("alice")
    make_user("micro-bob", name="Bob Microbe")
    make_user("gone", name="Micro Gone")
    with app.app_context(), transaction():
        db.session.get(User, "gone").is_active = False
    response = client.get("/admin/grantees", query_string={"grantee": "micro"}, headers=HTMX)
    html = html_of(response)
    assert response.status_code == 200 and "<html" not in html
    assert re.findall(r'data-value="([^"]+)"', html) == ["micro-bob", lab]
    assert "Bob Microbe" in html and "· Department" in html


@pytest.mark.parametrize("text", ["", "o'brien", "100%"])
def test_suggestions_for_nothing_or_odd_text(admin, text):
    response = admin.get("/admin/grantees", query_string={"grantee": text})
    assert response.status_code == 200
    assert "<li>" not in html_of(response)
