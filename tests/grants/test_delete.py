"""``DELETE /api/department/{id}`` and ``DELETE /api/project/{id}``: a container that still
owns entities is 409 unless ``?force=true`` (ADMIN), which clears the references; grants on
and to it go with it (decisions §5). Every entity whose reference is cleared is changed like
any other update: version + 1, modifiedBy/modifiedUtc and an ``update`` audit event."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select

from labapp.db import db
from labapp.model import AuditEvent, Entity
from tests.conftest import DEFAULT_DEPARTMENT, ApiClient
from tests.contracts.problem import assert_problem
from tests.entities.conftest import Grants, fetch, save
from tests.grants.conftest import grant_rows, state


@pytest.fixture
def alice(member: Callable[..., ApiClient]) -> ApiClient:
    return member("alice")


# --- departments ---------------------------------------------------------------------------

def test_an_unused_department_is_deleted_with_its_grants(app: Flask, admin: ApiClient,
                                                         department: Callable,
                                                         project: Callable, grant: Grants,
                                                         alice: ApiClient) -> None:
    gone, other = department("Gone"), department("Other")
    proj = project("Kept")
    grant.department(gone, "Read", user="alice")
    grant.department(other, "Read", to_department=gone)
    grant.department(other, "Write", user="alice")
    grant.project(proj, "Read", to_department=gone)

    response = admin.delete(f"/api/department/{gone}")

    assert response.status_code == 204 and response.get_data() == b""
    fetch(admin, "Department", gone, 404)
    assert_problem(admin.get(f"/api/department/{gone}/access"), 404, "not_found")
    assert grant_rows(app) == {"department": [(other, "alice", None, "Write")], "project": []}
    fetch(admin, "Department", other)


@pytest.mark.parametrize("owner", ["sample", "member", "sub-department", "project"])
def test_a_department_in_use_is_409(app: Flask, admin: ApiClient, department: Callable,
                                    make_user: Callable, owner: str) -> None:
    busy = department("Busy")
    if owner == "sample":
        save(admin, {"eClass": "Sample", "id": "DEL-S", "departmentID": busy})
    elif owner == "member":
        make_user("mia", department_id=busy)
    elif owner == "sub-department":
        department("Child", parentID=busy)
    else:
        save(admin, {"eClass": "Project", "name": "In Busy", "departmentID": busy})
    before = state(app)

    for query in ("", "?force=false"):
        assert_problem(admin.delete(f"/api/department/{busy}{query}"), 409, "in_use")
    assert state(app) == before
    fetch(admin, "Department", busy)


@pytest.fixture
def busy_world(admin: ApiClient, department: Callable, project: Callable, make_user: Callable,
               grant: Grants) -> dict[str, str]:
    """Department Busy with a sample, a member, a child department, a project and grants."""
    busy = department("Busy")
    child = department("Child", parentID=busy)
    proj = project("In Busy", departmentID=busy)
    save(admin, {"eClass": "Sample", "id": "DEL-S", "departmentID": busy},
         {"eClass": "Sample", "id": "DEL-P", "departmentID": DEFAULT_DEPARTMENT,
          "projectID": proj})
    make_user("mia", department_id=busy)
    grant.department(busy, "Read", user="admin")
    grant.department(DEFAULT_DEPARTMENT, "Read", to_department=busy)
    grant.project(proj, "Write", user="mia")
    grant.project(proj, "Read", to_department=busy)
    return {"busy": busy, "child": child, "proj": proj}


def assert_cleared(before: dict[str, Any], after: dict[str, Any], old: str,
                   fields: set[str]) -> None:
    """``after`` is ``before`` changed once by the administrator: ``fields`` went from ``old``
    to null, with one more version and one more audit event recording exactly that."""
    assert after["version"] == before["version"] + 1
    assert after["modifiedBy"] == "admin"
    assert after["modifiedUtc"] >= before["modifiedUtc"]
    assert len(after["auditEvents"]) == len(before["auditEvents"]) + 1
    newest = after["auditEvents"][0]
    assert (newest["action"], newest["version"], newest["userID"]) == (
        "update", after["version"], "admin")
    assert newest["timestampUtc"] == after["modifiedUtc"]
    assert newest["changes"] == {field: {"old": old, "new": None} for field in fields}
    for field in fields:
        assert after[field] is None


def assert_unchanged(before: dict[str, Any], after: dict[str, Any]) -> None:
    assert (after["version"], after["modifiedUtc"], after["auditEvents"]) == (
        before["version"], before["modifiedUtc"], before["auditEvents"])


def test_only_admin_may_force(app: Flask, busy_world: dict[str, str],
                              member: Callable[..., ApiClient]) -> None:
    manager = member("dm", roles=["DATA_MANAGER"])
    before = state(app)

    assert_problem(manager.delete(f"/api/department/{busy_world['busy']}?force=true"), 403,
                   "missing_scope")
    assert_problem(manager.delete(f"/api/department/{busy_world['busy']}"), 409, "in_use")
    assert state(app) == before


def test_admin_force_clears_the_references(app: Flask, admin: ApiClient,
                                           busy_world: dict[str, str],
                                           api_as: Callable[..., ApiClient]) -> None:
    busy, child, proj = busy_world["busy"], busy_world["child"], busy_world["proj"]

    response = admin.delete(f"/api/department/{busy}?force=true")

    assert response.status_code == 204
    fetch(admin, "Department", busy, 404)
    # Everything it owned keeps existing, with the reference cleared.
    assert fetch(admin, "Sample", "DEL-S")["departmentID"] is None
    assert fetch(admin, "User", "mia")["departmentID"] is None
    assert fetch(admin, "Department", child)["parentID"] is None
    assert fetch(admin, "Project", proj)["departmentID"] is None
    assert fetch(admin, "Sample", "DEL-P")["projectID"] == proj
    # Grants on the department and to it are gone; mia's own project grant stays.
    assert grant_rows(app) == {"department": [], "project": [(proj, "mia", None, "Write")]}
    mia = api_as("mia")
    assert fetch(mia, "Sample", "DEL-P")["accessType"] == "Write"
    assert mia.get("/api/user").get_json()["departmentID"] is None


def test_force_records_every_cleared_reference(admin: ApiClient,
                                              busy_world: dict[str, str]) -> None:
    """Each entity is bumped once and audited once, even when two of its fields pointed at
    the department (a note about it, which also belongs to it)."""
    busy, child, proj = busy_world["busy"], busy_world["child"], busy_world["proj"]
    (note,) = save(admin, {"eClass": "Note", "subjectID": busy, "content": "about Busy"})
    assert note["departmentID"] == busy
    touched = {("Sample", "DEL-S"): {"departmentID"}, ("User", "mia"): {"departmentID"},
               ("Department", child): {"parentID"}, ("Project", proj): {"departmentID"},
               ("Note", note["id"]): {"subjectID", "departmentID"}}
    kept = [("Sample", "DEL-P"), ("Department", DEFAULT_DEPARTMENT), ("User", "admin")]
    before = {key: fetch(admin, *key) for key in [*touched, *kept]}

    assert admin.delete(f"/api/department/{busy}?force=true").status_code == 204

    for key, fields in touched.items():
        assert_cleared(before[key], fetch(admin, *key), busy, fields)
    for key in kept:
        assert_unchanged(before[key], fetch(admin, *key))


def test_force_is_a_boolean(app: Flask, admin: ApiClient, department: Callable) -> None:
    gone = department("Gone")
    before = state(app)
    problem = assert_problem(admin.delete(f"/api/department/{gone}?force=maybe"), 400,
                             "validation_failed", errors=True)
    assert problem["errors"][0]["field"] == "force"
    assert state(app) == before


# --- projects ------------------------------------------------------------------------------

def test_an_unused_project_is_deleted_with_its_grants(app: Flask, admin: ApiClient,
                                                      project: Callable, grant: Grants,
                                                      alice: ApiClient) -> None:
    gone, kept = project("Gone"), project("Kept")
    grant.project(gone, "Write", user="alice")
    grant.project(gone, "Read", to_department=DEFAULT_DEPARTMENT)
    grant.project(kept, "Read", user="alice")

    response = admin.delete(f"/api/project/{gone}")

    assert response.status_code == 204 and response.get_data() == b""
    fetch(admin, "Project", gone, 404)
    assert_problem(admin.get(f"/api/project/{gone}/rls"), 404, "not_found")
    assert grant_rows(app)["project"] == [(kept, "alice", None, "Read")]


@pytest.fixture
def busy_project(admin: ApiClient, department: Callable, project: Callable,
                 grant: Grants) -> str:
    away = department("Away")
    proj = project("Busy", departmentID=away)
    save(admin, {"eClass": "Sample", "id": "DEL-S", "departmentID": away, "projectID": proj})
    grant.project(proj, "Write", user="alice")
    return proj


@pytest.mark.parametrize("role", ["DATA_MANAGER_PROJECT_WRITE", "ADMIN"])
def test_a_project_in_use_is_409(app: Flask, alice: ApiClient, busy_project: str,
                                 caller: Callable, role: str) -> None:
    api = caller(role)
    before = state(app)
    assert_problem(api.delete(f"/api/project/{busy_project}"), 409, "in_use")
    assert state(app) == before


def test_only_admin_may_force_a_project(app: Flask, alice: ApiClient, busy_project: str,
                                        member: Callable[..., ApiClient]) -> None:
    manager = member("pw", roles=["DATA_MANAGER_PROJECT_WRITE"])
    before = state(app)
    assert_problem(manager.delete(f"/api/project/{busy_project}?force=true"), 403,
                   "missing_scope")
    assert state(app) == before
    assert fetch(alice, "Sample", "DEL-S")["accessType"] == "Write"


def test_admin_force_deletes_a_project_in_use(app: Flask, admin: ApiClient, alice: ApiClient,
                                              busy_project: str) -> None:
    before = fetch(admin, "Sample", "DEL-S")
    away = before["departmentID"]

    assert admin.delete(f"/api/project/{busy_project}?force=true").status_code == 204

    fetch(admin, "Project", busy_project, 404)
    sample = fetch(admin, "Sample", "DEL-S")
    assert (sample["projectID"], sample["departmentID"]) == (None, away)
    assert_cleared(before, sample, busy_project, {"projectID"})
    assert grant_rows(app)["project"] == []
    # alice saw the sample only through the project.
    fetch(alice, "Sample", "DEL-S", 404)


def test_a_department_or_user_cannot_be_deleted_as_a_project(app: Flask, admin: ApiClient,
                                                             alice: ApiClient,
                                                             department: Callable) -> None:
    dep = department("Not a project")
    before = state(app)
    for target in (dep, "alice"):
        assert_problem(admin.delete(f"/api/project/{target}?force=true"), 404, "not_found")
    assert_problem(admin.delete("/api/department/alice?force=true"), 404, "not_found")
    assert state(app) == before


def test_force_over_many_entities_bumps_and_audits_each_once(app: Flask, admin: ApiClient,
                                                             project: Callable) -> None:
    """The references are cleared set-based; every row still gets its version and audit."""
    proj = project("Large")
    ids = [entity["id"] for entity in save(admin, *[
        {"eClass": "Sample", "name": f"L{number}", "projectID": proj}
        for number in range(240)])]

    assert admin.delete(f"/api/project/{proj}?force=true").status_code == 204

    with app.app_context():
        rows = db.session.execute(select(Entity.id, Entity.project_id, Entity.version,
                                         Entity.modified_by)
                                  .where(Entity.id.in_(ids))).all()
        audits = db.session.execute(select(AuditEvent.entity_id, AuditEvent.version,
                                           AuditEvent.changes)
                                    .where(AuditEvent.entity_id.in_(ids),
                                           AuditEvent.action == "update")).all()
    assert sorted(rows) == sorted((entity_id, None, 2, "admin") for entity_id in ids)
    assert sorted(audits) == sorted(
        (entity_id, 2, {"projectID": {"old": proj, "new": None}}) for entity_id in ids)
