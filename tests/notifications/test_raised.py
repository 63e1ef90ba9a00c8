"""Notifications are raised in the transaction of their cause, for the right user only."""
from __future__ import annotations

from collections.abc import Callable

from tests.conftest import ApiClient
from tests.entities.conftest import save
from tests.notifications.conftest import unread


def test_a_request_created_for_someone_notifies_the_assignee_only(
        member: Callable[..., ApiClient]) -> None:
    alice, bob = member("alice"), member("bob")
    request = save(alice, {"eClass": "Request", "name": "Measure pH", "assigneeID": "bob"})[0]
    [note] = unread(bob)
    assert (note["kind"], note["subjectClass"], note["subjectID"], note["status"],
            note["userID"], note["createdBy"]) == (
        "RequestAssigned", "Request", request["id"], "Unread", "bob", "alice")
    assert "Measure pH" in note["message"]
    assert unread(alice) == []


def test_reassigning_a_request_notifies_the_new_assignee(
        member: Callable[..., ApiClient]) -> None:
    alice, bob, carol = member("alice"), member("bob"), member("carol")
    request = save(alice, {"eClass": "Request", "name": "Spin", "assigneeID": "bob"})[0]
    save(alice, {"eClass": "Request", "id": request["id"], "assigneeID": "carol"}, status=200)
    assert [n["kind"] for n in unread(carol)] == ["RequestAssigned"]
    assert len(unread(bob)) == 1


def test_assigning_yourself_raises_nothing(member: Callable[..., ApiClient]) -> None:
    alice = member("alice")
    save(alice, {"eClass": "Request", "name": "Mine", "assigneeID": "alice"})
    assert unread(alice) == []


def test_someone_else_changing_the_status_notifies_the_owner(
        member: Callable[..., ApiClient]) -> None:
    alice, bob = member("alice"), member("bob")  # same department: bob may write it
    sample = save(alice, {"eClass": "Sample", "name": "S1"})[0]
    save(alice, {"eClass": "Sample", "id": sample["id"], "status": "InProgress"}, status=200)
    assert unread(alice) == []  # her own change
    save(bob, {"eClass": "Sample", "id": sample["id"], "status": "Completed"}, status=200)
    [note] = unread(alice)
    assert (note["kind"], note["subjectID"], note["createdBy"]) == (
        "StatusChanged", sample["id"], "bob")
    # "moved" would read as a change of place in a storage app
    assert note["message"].endswith(
        " changed the status of your Sample “S1” from In progress to Completed.")
    assert "moved" not in note["message"]
    save(bob, {"eClass": "Sample", "id": sample["id"], "name": "renamed"}, status=200)
    assert len(unread(alice)) == 1  # other changes are not notified


def test_a_rejected_batch_raises_nothing(member: Callable[..., ApiClient]) -> None:
    alice, bob = member("alice"), member("bob")
    response = alice.post("/api/entity", json={"entities": [
        {"eClass": "Request", "name": "ok", "assigneeID": "bob"},
        {"eClass": "Sample", "status": "NoSuchStatus"}]})
    assert response.status_code == 400
    assert unread(bob) == []


def test_a_grant_notifies_the_user_given_access(
        admin: ApiClient, member: Callable[..., ApiClient],
        department: Callable[..., str], project: Callable[..., str]) -> None:
    bob = member("bob")
    chemistry = department("Chemistry")
    response = admin.post(f"/api/department/{chemistry}/access",
                          json={"accessType": "Read", "userID": "bob"})
    assert response.status_code == 201
    [note] = unread(bob)
    assert (note["kind"], note["subjectClass"], note["subjectID"], note["createdBy"]) == (
        "AccessGiven", "Department", chemistry, "admin")
    # The same access again gives nothing new; Write is new.
    admin.post(f"/api/department/{chemistry}/access",
               json={"accessType": "Read", "userID": "bob"})
    assert len(unread(bob)) == 1
    admin.post(f"/api/department/{chemistry}/access",
               json={"accessType": "Write", "userID": "bob"})
    assert len(unread(bob)) == 2
    vaccine = project("Vaccine")
    admin.post(f"/api/project/{vaccine}/rls", json={"accessType": "Write", "userID": "bob"})
    assert unread(bob)[0]["subjectID"] == vaccine


def test_a_grant_to_a_department_notifies_its_members(
        admin: ApiClient, member: Callable[..., ApiClient],
        department: Callable[..., str], project: Callable[..., str]) -> None:
    physics = department("Physics")
    carol, dave = member("carol", department_id=physics), member("dave")
    vaccine = project("Vaccine")
    response = admin.post(f"/api/project/{vaccine}/rls",
                          json={"accessType": "Read", "departmentID": physics})
    assert response.status_code == 201
    assert [n["subjectID"] for n in unread(carol)] == [vaccine]
    assert unread(dave) == []


def test_a_rejected_grant_raises_nothing(admin: ApiClient, member: Callable[..., ApiClient],
                                         department: Callable[..., str]) -> None:
    bob = member("bob")
    chemistry = department("Chemistry")
    response = admin.post(f"/api/department/{chemistry}/access",
                          json={"accessType": "Read", "userID": "bob",
                                "accessDepartmentID": chemistry})
    assert response.status_code == 400
    assert unread(bob) == []
