"""Every access and role endpoint with every kind of caller: the scopes exactly as the spec
names them (http-api.md "Department", "Project", "User roles"; decisions §4).

Anonymous callers get 401, callers without a listed scope 403 and nothing changes; each listed
scope succeeds and its change happens.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from flask import Flask

from tests.contracts.problem import assert_problem
from tests.entities.conftest import Grants
from tests.grants.conftest import CALLERS, state


@dataclass(frozen=True)
class Route:
    method: str
    rule: str  # the Flask rule; <placeholders> are filled from the scene
    allowed: tuple[str, ...]
    success: int
    body: dict[str, Any] | None = None


DEPARTMENT = ("ADMIN", "DATA_MANAGER")
PROJECT_READ = ("ADMIN", "DATA_MANAGER")
PROJECT_WRITE = ("ADMIN", "DATA_MANAGER_PROJECT_WRITE")
ROLES = ("ADMIN",)
_DEP = "/api/department/<department_id>"
_PROJ = "/api/project/<project_id>"

ROUTES = {
    "department-access-list": Route("GET", f"{_DEP}/access", DEPARTMENT, 200),
    "department-access-grant": Route("POST", f"{_DEP}/access", DEPARTMENT, 201,
                                     {"accessType": "Write", "userID": "admin"}),
    "department-access-update": Route("POST", f"{_DEP}/access", DEPARTMENT, 200,
                                      {"accessType": "Write", "userID": "<user_id>"}),
    "department-access-revoke-user": Route("DELETE", f"{_DEP}/access/user/<user_id>",
                                           DEPARTMENT, 204),
    "department-access-revoke-department": Route(
        "DELETE", f"{_DEP}/access/department/<access_department_id>", DEPARTMENT, 204),
    "department-delete": Route("DELETE", _DEP, DEPARTMENT, 204),
    "project-rls-list": Route("GET", f"{_PROJ}/rls", PROJECT_READ, 200),
    "project-rls-grant": Route("POST", f"{_PROJ}/rls", PROJECT_WRITE, 201,
                               {"accessType": "Read", "departmentID": "<access_department_id>"}),
    "project-rls-update": Route("POST", f"{_PROJ}/rls", PROJECT_WRITE, 200,
                                {"accessType": "Write", "userID": "<user_id>"}),
    "project-rls-revoke": Route("DELETE", f"{_PROJ}/rls/<grantee_id>", PROJECT_WRITE, 204),
    "project-delete": Route("DELETE", _PROJ, PROJECT_WRITE, 204),
    "role-list": Route("GET", "/api/userRole", ROLES, 200),
    "role-assign": Route("PUT", "/api/userRole/assign", ROLES, 200,
                         {"name": "DATA_MANAGER", "userID": "<user_id>"}),
    "role-revoke": Route("PUT", "/api/userRole/revoke", ROLES, 200,
                         {"name": "DATA_MANAGER_PROJECT_WRITE", "userID": "<user_id>"}),
}
_PREFIXES = ("/api/department", "/api/project", "/api/userRole")


@pytest.fixture
def scene(department: Callable[..., str], project: Callable[..., str],
          make_user: Callable[..., str], grant: Grants) -> dict[str, str]:
    """An unused department and project with Read grants to gina (who also holds
    DATA_MANAGER_PROJECT_WRITE), and a Read grant on the department to a second department.

    Keys are the rules' placeholder names."""
    department_id, other = department("Scoped"), department("Other")
    project_id = project("Scoped")
    make_user("gina", roles=["DATA_MANAGER_PROJECT_WRITE"])
    grant.department(department_id, "Read", user="gina")
    grant.department(department_id, "Read", to_department=other)
    grant.project(project_id, "Read", user="gina")
    return {"department_id": department_id, "access_department_id": other,
            "project_id": project_id, "user_id": "gina", "grantee_id": "gina"}


def _fill(text: str, ids: dict[str, str]) -> str:
    for name, value in ids.items():
        text = text.replace(f"<{name}>", value)
    return text


def call(api: Any, route: Route, ids: dict[str, str]):
    kwargs = {} if route.body is None else {
        "json": {key: _fill(value, ids) for key, value in route.body.items()}}
    return api.open(route.method, _fill(route.rule, ids), **kwargs)


@pytest.mark.parametrize("who", CALLERS)
@pytest.mark.parametrize("name", ROUTES)
def test_scopes(app: Flask, scene: dict[str, str], caller: Callable[[str], Any],
                name: str, who: str) -> None:
    route = ROUTES[name]
    api = caller(who)
    before = state(app)

    response = call(api, route, scene)

    if who == "anonymous":
        assert_problem(response, 401, "not_authenticated")
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
    elif who not in route.allowed:
        body = assert_problem(response, 403, "missing_scope")
        assert " or ".join(route.allowed) in body["detail"]
    else:
        assert response.status_code == route.success, response.get_data(as_text=True)
        after = state(app)
        assert (after == before) is (route.method == "GET")
        return
    assert state(app) == before


def test_every_access_and_role_route_is_in_the_matrix(app: Flask) -> None:
    """A new route under these prefixes must join ROUTES, and so get its scope tests.
    (Project settings are tested with their own endpoints.)"""
    served = {(method, rule.rule) for rule in app.url_map.iter_rules()
              if rule.rule.startswith(_PREFIXES) and "/settings/" not in rule.rule
              for method in rule.methods - {"HEAD", "OPTIONS"}}
    assert served == {(route.method, route.rule) for route in ROUTES.values()}
