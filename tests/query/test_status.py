"""``GET /api/query/status/{eClass}/{id?}``: the workflow of a class, and with an id the
entity's current status and where it may go next."""
from __future__ import annotations

from collections.abc import Callable

import pytest

from labapp.model.registry import find_class
from labapp.query.status import status_info
from tests.conftest import ApiClient
from tests.contracts.problem import assert_problem
from tests.entities.conftest import body_of, save

WORKFLOW = {"Initial": ["InProgress", "Canceled"],
            "InProgress": ["Completed", "Canceled", "Initial"],
            "Completed": ["InProgress"],
            "Canceled": ["Initial"]}


def status(api: ApiClient, path: str, code: int = 200) -> dict:
    return body_of(api.get(f"/api/query/status/{path}"), code)


def test_a_workflow_class_lists_statuses_initial_and_transitions(admin: ApiClient) -> None:
    assert status(admin, "Experiment") == {
        "statuses": ["Initial", "InProgress", "Completed", "Canceled"],
        "initial": "Initial", "transitions": WORKFLOW}


def test_material_can_be_discarded_from_every_status_and_never_leaves_it(
        admin: ApiClient) -> None:
    body = status(admin, "sAmPlE")

    assert body["statuses"][-1] == "Discarded"
    assert body["transitions"] == {**{state: moves + ["Discarded"]
                                      for state, moves in WORKFLOW.items()},
                                   "Discarded": []}


def test_projects_are_active_instead_of_in_progress(admin: ApiClient) -> None:
    body = status(admin, "Project")

    assert body["statuses"] == ["Initial", "Active", "Completed", "Canceled"]
    assert body["transitions"]["Initial"] == ["Active", "Canceled"]


@pytest.mark.parametrize(("eclass", "initial", "transitions"), [
    ("Location", "Active", {"Active": ["Inactive"], "Inactive": ["Active"]}),
    ("Note", "Initial", {"Initial": []}),
])
def test_a_class_without_arrows_may_move_to_any_other_status(
        admin: ApiClient, eclass: str, initial: str, transitions: dict) -> None:
    body = status(admin, eclass)

    assert body["initial"] == initial and body["transitions"] == transitions
    assert "current" not in body and "allowed" not in body


def test_with_an_id_the_current_status_and_the_allowed_moves(admin: ApiClient) -> None:
    save(admin, {"eClass": "Sample", "id": "ST-1", "status": "InProgress"},
         {"eClass": "Sample", "id": "shelf 2/ST 2", "status": "Discarded"})

    body = status(admin, "Sample/ST-1")
    assert body["current"] == "InProgress"
    assert body["allowed"] == ["Completed", "Canceled", "Initial", "Discarded"]
    assert body["transitions"] == status(admin, "Sample")["transitions"]
    assert status(admin, "Sample/shelf 2/ST 2")["allowed"] == []


def test_a_current_status_outside_the_workflow_allows_nothing() -> None:
    info = status_info(find_class("Request"), "Archived")

    assert info["current"] == "Archived" and info["allowed"] == []
    assert status_info(find_class("Location"), "Inactive")["allowed"] == ["Active"]


def test_an_entity_the_caller_may_not_see_is_404(admin: ApiClient, department: Callable,
                                                 member: Callable) -> None:
    away = department("Away")
    save(admin, {"eClass": "Sample", "id": "ST-AWAY", "departmentID": away},
         {"eClass": "Experiment", "id": "ST-EXP"})
    alice = member("alice")

    assert_problem(alice.get("/api/query/status/Sample/ST-AWAY"), 404, "not_found")
    assert status(admin, "Sample/ST-AWAY")["current"] == "Initial"
    assert_problem(alice.get("/api/query/status/Sample/ST-NOPE"), 404, "not_found")
    assert_problem(alice.get("/api/query/status/Sample/ST-EXP"), 404, "not_found")


def test_unknown_classes_and_anonymous_callers(admin: ApiClient, client) -> None:
    assert_problem(admin.get("/api/query/status/Gadget"), 404, "unknown_class")
    assert_problem(admin.get("/api/query/status/Gadget/X-1"), 404, "unknown_class")
    assert_problem(client.get("/api/query/status/Sample"), 401, "not_authenticated")
