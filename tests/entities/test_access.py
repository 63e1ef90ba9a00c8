"""Row-level security on the entity API (decisions §5): who may see, who may write, and that
what is hidden stays indistinguishable from what does not exist."""
from __future__ import annotations

from collections.abc import Callable

import pytest
from flask import Flask

from tests.conftest import AUTH_METHODS, DEFAULT_DEPARTMENT, ApiClient
from tests.contracts.problem import assert_problem
from tests.entities.conftest import Grants, fetch, listing, save, snapshot


@pytest.fixture
def world(admin: ApiClient, department, project) -> dict[str, str]:
    """alice lives in DEP00001; ``away`` is another department with project ``proj``.

    Entities: AC-HOME (alice's department), AC-AWAY (away), AC-PROJ (away + proj),
    AC-FREE (no department, project proj).
    """
    away = department("Away")
    proj = project("Proj", departmentID=away)
    save(admin, {"eClass": "Sample", "id": "AC-HOME", "departmentID": DEFAULT_DEPARTMENT},
         {"eClass": "Sample", "id": "AC-AWAY", "departmentID": away},
         {"eClass": "Sample", "id": "AC-PROJ", "departmentID": away, "projectID": proj},
         {"eClass": "Sample", "id": "AC-FREE", "departmentID": None, "projectID": proj})
    return {"away": away, "proj": proj}


@pytest.fixture
def alice(member: Callable[..., ApiClient], world: dict) -> ApiClient:
    return member("alice")


SAMPLES = ("AC-HOME", "AC-AWAY", "AC-PROJ", "AC-FREE")


def access_of(api: ApiClient) -> dict[str, str]:
    """accessType of every world sample as GET answers it ("None" for 404)."""
    seen = {}
    for entity_id in SAMPLES:
        response = api.get(f"/api/entity/Sample/{entity_id}")
        if response.status_code == 404:
            assert_problem(response, 404, "not_found")
            seen[entity_id] = "None"
        else:
            body = response.get_json()
            assert body["canWrite"] is (body["accessType"] == "Write")
            seen[entity_id] = body["accessType"]
    listed = listing(api, "Sample", filter="startswith(id, 'AC-')")
    assert sorted(row["id"] for row in listed["data"]) == sorted(
        entity_id for entity_id, access in seen.items() if access != "None")
    assert listed["total"] == len(listed["data"])
    return seen


def grant_alice(grant: Grants, world: dict, kind: str, target: str, access: str,
                via_department: bool) -> None:
    who = {"to_department": DEFAULT_DEPARTMENT} if via_department else {"user": "alice"}
    getattr(grant, kind)(world[target], access, **who)


def test_admin_sees_and_writes_everything(admin: ApiClient, world: dict) -> None:
    assert access_of(admin) == dict.fromkeys(SAMPLES, "Write")


def test_a_member_sees_only_the_home_department(alice: ApiClient) -> None:
    assert access_of(alice) == {"AC-HOME": "Write", "AC-AWAY": "None", "AC-PROJ": "None",
                                "AC-FREE": "None"}


@pytest.mark.parametrize("via_department", [False, True], ids=["user", "department"])
@pytest.mark.parametrize(("kind", "target", "access", "expected"), [
    ("department", "away", "Read", {"AC-AWAY": "Read", "AC-PROJ": "Read", "AC-FREE": "None"}),
    ("department", "away", "Write", {"AC-AWAY": "Write", "AC-PROJ": "Write",
                                     "AC-FREE": "None"}),
    ("project", "proj", "Read", {"AC-AWAY": "None", "AC-PROJ": "Read", "AC-FREE": "Read"}),
    ("project", "proj", "Write", {"AC-AWAY": "None", "AC-PROJ": "Write", "AC-FREE": "Write"}),
])
def test_grants_open_departments_and_projects(alice: ApiClient, grant: Grants, world: dict,
                                              kind: str, target: str, access: str,
                                              expected: dict, via_department: bool) -> None:
    grant_alice(grant, world, kind, target, access, via_department)
    assert access_of(alice) == {"AC-HOME": "Write", **expected}


def test_write_on_either_side_is_enough(alice: ApiClient, grant: Grants, world: dict) -> None:
    grant.department(world["away"], "Read", user="alice")
    grant.project(world["proj"], "Write", user="alice")
    assert access_of(alice) == {"AC-HOME": "Write", "AC-AWAY": "Read", "AC-PROJ": "Write",
                                "AC-FREE": "Write"}


def test_grants_to_another_department_do_not_count(alice: ApiClient, grant: Grants,
                                                   world: dict) -> None:
    grant.department(world["away"], "Write", to_department=world["away"])
    grant.project(world["proj"], "Write", user="admin")
    assert access_of(alice)["AC-AWAY"] == "None"


# --- updates -------------------------------------------------------------------------------

def test_an_invisible_entity_cannot_be_updated_and_stays_hidden(app: Flask, alice: ApiClient,
                                                                world: dict) -> None:
    before = snapshot(app)
    for item in ({"eClass": "Sample", "id": "AC-AWAY", "name": "mine"},
                 {"eClass": "Experiment", "id": "AC-AWAY", "name": "mine"},
                 {"eClass": "Sample", "id": "AC-AWAY", "notes": [{"content": "x"}]},
                 {"eClass": "Sample", "id": "AC-AWAY", "version": 9}):
        response = alice.post("/api/entity", json={"entities": [item]})
        body = assert_problem(response, 404, "not_found")
        assert "AC-AWAY" in body["detail"] and "Sample" not in body["detail"].replace(
            item["eClass"], "")
    assert snapshot(app) == before


def test_a_readable_entity_is_403_on_update(app: Flask, alice: ApiClient, grant: Grants,
                                            world: dict) -> None:
    grant.department(world["away"], "Read", user="alice")
    before = snapshot(app)
    response = alice.post("/api/entity", json={"entities": [
        {"eClass": "Sample", "id": "AC-AWAY", "name": "mine"}]})
    assert_problem(response, 403, "forbidden")
    assert snapshot(app) == before


def test_a_writable_entity_can_be_updated(alice: ApiClient, grant: Grants,
                                          world: dict) -> None:
    grant.project(world["proj"], "Write", user="alice")
    (saved,) = save(alice, {"eClass": "Sample", "id": "AC-PROJ", "name": "mine"}, status=200)
    assert saved["name"] == "mine" and saved["modifiedBy"] == "alice"


def test_moving_an_entity_needs_write_on_the_destination(app: Flask, alice: ApiClient,
                                                         grant: Grants, world: dict) -> None:
    before = snapshot(app)
    response = alice.post("/api/entity", json={"entities": [
        {"eClass": "Sample", "id": "AC-HOME", "departmentID": world["away"]}]})
    assert_problem(response, 403, "forbidden")
    assert snapshot(app) == before

    grant.department(world["away"], "Write", user="alice")
    (saved,) = save(alice, {"eClass": "Sample", "id": "AC-HOME",
                            "departmentID": world["away"]}, status=200)
    assert saved["departmentID"] == world["away"]


# --- creation ------------------------------------------------------------------------------

def test_creating_into_a_department_without_write_is_403(app: Flask, alice: ApiClient,
                                                         grant: Grants, world: dict) -> None:
    grant.department(world["away"], "Read", user="alice")
    before = snapshot(app)
    for item in ({"eClass": "Sample", "departmentID": world["away"]},
                 {"eClass": "Sample", "parentID": "AC-AWAY"},  # inherited
                 {"eClass": "Sample", "departmentID": None},
                 {"eClass": "Note", "subjectID": "AC-AWAY", "content": "x"}):
        response = alice.post("/api/entity", json={"entities": [{"eClass": "Sample"}, item]})
        body = assert_problem(response, 403, "forbidden")
        assert body["detail"].startswith("entities[1]")
    assert snapshot(app) == before


def test_creating_with_write_on_the_department_or_the_project(alice: ApiClient,
                                                              grant: Grants,
                                                              world: dict) -> None:
    grant.project(world["proj"], "Write", user="alice")
    (child,) = save(alice, {"eClass": "Sample", "parentID": "AC-PROJ"})
    assert (child["departmentID"], child["projectID"]) == (world["away"], world["proj"])
    (free,) = save(alice, {"eClass": "Sample", "id": "AC-NEW", "departmentID": None,
                           "projectID": world["proj"]})
    assert free["departmentID"] is None

    grant.department(world["away"], "Write", user="alice")
    (placed,) = save(alice, {"eClass": "Experiment", "departmentID": world["away"]})
    assert placed["departmentID"] == world["away"]


def test_references_to_hidden_entities_read_like_unknown_ones(app: Flask, alice: ApiClient,
                                                              world: dict) -> None:
    before = snapshot(app)
    details = []
    for target in ("AC-AWAY", "AC-NOWHERE"):
        response = alice.post("/api/entity", json={"entities": [
            {"eClass": "Sample", "parentID": target}]})
        body = assert_problem(response, 400, "invalid_entity", errors=True)
        details.append(body["detail"].replace(target, "<id>"))
        assert body["errors"][0]["field"] == "entities.0.parentID"
    assert details[0] == details[1]
    response = alice.post("/api/entity", json={"entities": [
        {"eClass": "Sample", "projectID": world["proj"]}]})
    assert_problem(response, 400, "invalid_entity", errors=True)
    assert snapshot(app) == before


def test_a_hidden_entity_is_not_a_step_input_either(alice: ApiClient) -> None:
    response = alice.post("/api/entity", json={"entities": [
        {"eClass": "Step", "input": [{"inputID": "AC-AWAY"}]}]})
    body = assert_problem(response, 400, "invalid_entity", errors=True)
    assert "AC-AWAY" in body["detail"] and "Sample" not in body["detail"]


# --- the directory and the classes that need a role -----------------------------------------

def test_users_and_departments_are_readable_by_everyone(alice: ApiClient, world: dict) -> None:
    for eclass, entity_id in (("User", "admin"), ("Department", world["away"])):
        detail = fetch(alice, eclass, entity_id)
        assert (detail["accessType"], detail["canWrite"]) == ("Read", False)
    users = listing(alice, "User", filter="id eq 'admin'")
    departments = listing(alice, "Department", filter=f"id eq '{world['away']}'")
    assert users["total"] == departments["total"] == 1


@pytest.mark.parametrize(("eclass", "entity_id"), [
    ("User", "alice"), ("User", "admin"), ("Department", DEFAULT_DEPARTMENT),
])
def test_only_admin_writes_the_directory(app: Flask, alice: ApiClient, admin: ApiClient,
                                         eclass: str, entity_id: str) -> None:
    before = snapshot(app)
    response = alice.post("/api/entity", json={"entities": [
        {"eClass": eclass, "id": entity_id, "name": "Renamed"}]})
    assert_problem(response, 403, "forbidden")
    assert snapshot(app) == before
    (saved,) = save(admin, {"eClass": eclass, "id": entity_id, "name": "Renamed"}, status=200)
    assert saved["name"] == "Renamed"


def test_a_project_is_written_through_its_own_grant(alice: ApiClient, grant: Grants,
                                                    world: dict) -> None:
    grant.project(world["proj"], "Read", user="alice")
    assert fetch(alice, "Project", world["proj"])["accessType"] == "Read"
    response = alice.post("/api/entity", json={"entities": [
        {"eClass": "Project", "id": world["proj"], "status": "Active"}]})
    assert_problem(response, 403, "forbidden")


def test_a_project_writer_may_change_it(member, grant: Grants, world: dict) -> None:
    bob = member("bob")
    grant.project(world["proj"], "Write", user="bob")
    (saved,) = save(bob, {"eClass": "Project", "id": world["proj"], "status": "Active"},
                    status=200)
    assert saved["status"] == "Active" and saved["projectID"] == world["proj"]


@pytest.mark.parametrize(("roles", "eclass", "allowed"), [
    ((), "Department", False), ((), "Project", False), ((), "User", False),
    (("DATA_MANAGER",), "Department", True), (("DATA_MANAGER",), "Project", True),
    (("DATA_MANAGER",), "User", False), (("DATA_MANAGER_PROJECT_WRITE",), "Project", False),
    (("ADMIN",), "User", True), (("ADMIN",), "Department", True),
])
def test_creating_departments_projects_and_users_needs_a_role(
        app: Flask, member, roles: tuple, eclass: str, allowed: bool) -> None:
    caller = member("carol", roles=list(roles))
    item = {"eClass": eclass, "name": "New"}
    if eclass == "User":
        item.update(id="newbie", password="newbie-password")
    if allowed:
        (created,) = save(caller, item)
        assert created["eClass"] == eclass and created["createdBy"] == "carol"
        return
    before = snapshot(app)
    body = assert_problem(caller.post("/api/entity", json={"entities": [item]}), 403,
                          "forbidden")
    assert eclass in body["detail"]
    assert snapshot(app) == before


def test_a_data_manager_sees_the_project_they_made(member) -> None:
    manager = member("dm", roles=["DATA_MANAGER"])
    (created,) = save(manager, {"eClass": "Project", "name": "Mine"})
    detail = fetch(manager, "Project", created["id"])
    assert detail["departmentID"] == DEFAULT_DEPARTMENT and detail["accessType"] == "Write"


# --- authentication ------------------------------------------------------------------------

@pytest.mark.parametrize("method", AUTH_METHODS)
def test_every_authentication_method_may_write(make_user, api_as, method: str) -> None:
    make_user("alice")
    api = api_as("alice", method)
    (created,) = save(api, {"eClass": "Sample"})
    assert created["createdBy"] == "alice"
    assert fetch(api, "Sample", created["id"])["canWrite"] is True


def test_a_cookie_write_without_csrf_token_is_refused(app: Flask, make_user, api_as) -> None:
    make_user("alice")
    api = api_as("alice", "cookie")
    before = snapshot(app)
    response = api.client.post("/api/entity", json={"entities": [{"eClass": "Sample"}]})
    assert response.status_code == 403 and response.get_json()["code"] == "csrf_failed"
    assert snapshot(app) == before


def test_writing_needs_authentication(app: Flask, client) -> None:
    before = snapshot(app)
    response = client.post("/api/entity", json={"entities": [{"eClass": "Sample"}]})
    assert_problem(response, 401, "not_authenticated")
    assert snapshot(app) == before


def test_files_of_a_visible_entity_are_filtered_too(admin: ApiClient, alice: ApiClient,
                                                    world: dict) -> None:
    save(admin, {"eClass": "File", "id": "AC-F-HOME", "name": "shared.txt",
                 "subjectID": "AC-HOME"},
         {"eClass": "File", "id": "AC-F-AWAY", "name": "secret.txt", "subjectID": "AC-HOME",
          "departmentID": world["away"]})
    assert sorted(file["id"] for file in fetch(admin, "Sample", "AC-HOME")["files"]) == [
        "AC-F-AWAY", "AC-F-HOME"]
    assert [file["id"] for file in fetch(alice, "Sample", "AC-HOME")["files"]] == ["AC-F-HOME"]
