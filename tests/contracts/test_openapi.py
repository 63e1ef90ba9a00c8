"""``/api/openapi.json`` documents every ``/api`` route, with its bodies and problem responses.

:func:`undocumented_operations` is the completeness check: it compares the application's URL
map with the document. The negative test proves it catches a route nobody documented.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from labapp.access.actor import BUILT_IN_ROLES
from labapp.auth.secrets import MIN_PASSWORD_LENGTH
from labapp.model.registry import classes, existing_class
from labapp.storage.slots import parse
from labapp.web.endpoints import ApiDoc, endpoint
from tests.conftest import bearer_header
from tests.contracts.problem import assert_problem

HTTP_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}
IGNORED_METHODS = {"HEAD", "OPTIONS"}
PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}
_RULE_ARGUMENT = re.compile(r"<(?:[^<>:]*:)?(\w+)>")
_PATH_TEMPLATE = re.compile(r"\{(\w+)\}")


def openapi_path(rule: str) -> str:
    """The OpenAPI path of a Werkzeug rule: ``/api/x/<int:item_id>`` → ``/api/x/{item_id}``."""
    return _RULE_ARGUMENT.sub(r"{\1}", rule)


def api_operations(app: Flask) -> Iterator[tuple[str, str, str]]:
    """``(METHOD, openapi path, endpoint)`` of every ``/api/`` route of ``app``."""
    for rule in app.url_map.iter_rules():
        if rule.rule.startswith("/api/"):
            for method in sorted(rule.methods - IGNORED_METHODS):
                yield method, openapi_path(rule.rule), rule.endpoint


def undocumented_operations(app: Flask, document: dict[str, Any]) -> list[str]:
    """Every ``METHOD /path`` the app serves under ``/api/`` that ``document`` lacks."""
    paths = document.get("paths", {})
    return sorted(f"{method} {path}" for method, path, _ in api_operations(app)
                  if method.lower() not in paths.get(path, {}))


def _resolve(document: dict[str, Any], ref: str) -> Any:
    assert ref.startswith("#/"), ref
    node: Any = document
    for part in ref[2:].split("/"):
        assert isinstance(node, dict) and part in node, f"unresolvable $ref {ref}"
        node = node[part]
    return node


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


@pytest.fixture
def document(client: FlaskClient) -> dict[str, Any]:
    """The document as an anonymous caller gets it (it is public)."""
    response = client.get("/api/openapi.json")
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    return response.get_json()


def _operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method in HTTP_METHODS:
                yield path, method, operation


def _api_doc(app: Flask, path: str, method: str) -> ApiDoc:
    for rule_method, rule_path, endpoint_name in api_operations(app):
        if (rule_method.lower(), rule_path) == (method, path):
            return app.view_functions[endpoint_name].api_doc
    raise AssertionError(f"{method.upper()} {path} is documented but not routed")


def test_document_is_public_openapi_3_1(document: dict[str, Any]) -> None:
    assert document["openapi"].startswith("3.1")
    assert document["info"]["title"] and document["info"]["version"]
    assert isinstance(document["paths"], dict) and document["paths"]


def test_every_api_route_is_documented(app: Flask, document: dict[str, Any]) -> None:
    assert undocumented_operations(app, document) == []


def test_document_has_no_operation_the_app_does_not_serve(
        app: Flask, document: dict[str, Any]) -> None:
    served = {(method.lower(), path) for method, path, _ in api_operations(app)}
    documented = {(method, path) for path, method, _ in _operations(document)}
    assert documented <= served


def test_structure_is_sound(document: dict[str, Any]) -> None:
    """Minimal structural validation (no validator dependency): ids, parameters, $refs."""
    problem = document["components"]["schemas"]["Problem"]
    assert set(problem["required"]) == {"type", "title", "status", "detail", "code"}
    assert {"type", "title", "status", "detail", "code", "errors"} <= set(problem["properties"])
    for ref in _refs(document):
        _resolve(document, ref)
    schemes = document["components"]["securitySchemes"]
    operation_ids = []
    for path, method, operation in _operations(document):
        assert path.startswith("/api/")
        operation_ids.append(operation["operationId"])
        assert isinstance(operation["summary"], str) and operation["summary"]
        path_parameters = {p["name"] for p in operation.get("parameters", [])
                           if p["in"] == "path"}
        assert path_parameters == set(_PATH_TEMPLATE.findall(path)), (method, path)
        for parameter in operation.get("parameters", []):
            assert parameter["in"] in {"path", "query", "header", "cookie"}
            assert "schema" in parameter
            if parameter["in"] == "path":
                assert parameter["required"] is True
        assert operation["responses"], (method, path)
        for status, response in operation["responses"].items():
            assert re.fullmatch(r"[1-5]\d\d", status), (method, path, status)
            assert isinstance(response["description"], str) and response["description"]
        for requirement in operation.get("security", document["security"]):
            assert set(requirement) <= set(schemes)
    assert len(operation_ids) == len(set(operation_ids)), "operationIds must be unique"


def test_every_operation_documents_its_problem_responses(
        app: Flask, document: dict[str, Any]) -> None:
    for path, method, operation in _operations(document):
        doc = _api_doc(app, path, method)
        expected = {"401", "429", "500"}  # 429: every /api request is rate-limited
        if not doc.public:
            expected.add("403")
            assert {} not in operation.get("security", document["security"]), path
        else:
            assert {} in operation["security"], f"public {path} must allow anonymous callers"
        if doc.body is not None or doc.forms:
            expected |= {"400", "413", "415"}
        expected |= {str(status) for status in doc.problems}
        responses = operation["responses"]
        assert expected <= set(responses), (method, path, sorted(responses))
        for status, response in responses.items():
            if status.startswith(("4", "5")):
                assert response["content"] == {"application/problem+json": {"schema":
                                                                             PROBLEM_REF}}
        successes = [status for status in responses if status.startswith("2")]
        assert successes, (method, path)


def test_every_response_documents_the_rate_limit_fields(document: dict[str, Any]) -> None:
    """Every /api answer carries RateLimit-Policy and RateLimit (decisions §18); a 429 also
    Retry-After. The fields are declared once, under components."""
    declared = document["components"]["headers"]
    assert {"RateLimit-Policy", "RateLimit", "Retry-After"} <= set(declared)
    assert declared["Retry-After"]["required"] is True
    for path, method, operation in _operations(document):
        for status, response in operation["responses"].items():
            names = {"RateLimit-Policy", "RateLimit"} | ({"Retry-After"} if status == "429"
                                                         else set())
            assert response["headers"] == {
                name: {"$ref": f"#/components/headers/{name}"} for name in names}, (
                method, path, status)


def test_json_bodies_are_documented(app: Flask, document: dict[str, Any]) -> None:
    bodies = 0
    for path, method, operation in _operations(document):
        doc = _api_doc(app, path, method)
        if doc.forms:
            content = operation["requestBody"]["content"]
            assert set(content) == set(doc.forms), (method, path)
            for media in content.values():
                schema = media["schema"]
                if schema.get("type") == "array":  # a JSON array body (dataset queries)
                    schema = schema["items"]
                schema = schema.get("allOf", [schema])[0]  # with constraints beside it
                assert _resolve(document, schema["$ref"])["properties"], path
            continue
        if doc.body is None:
            assert "requestBody" not in operation, (method, path)
            continue
        bodies += 1
        request_body = operation["requestBody"]
        assert request_body["required"] is (not doc.optional_body)
        schema = request_body["content"]["application/json"]["schema"]
        assert _resolve(document, schema["$ref"])["properties"]
    assert bodies, "at least the login body is documented"


def _body(document: dict[str, Any], method: str, path: str) -> Any:
    return document["paths"][path][method]["requestBody"]["content"]["application/json"][
        "schema"]


def test_entity_items_are_described_per_class_from_the_registry(
        document: dict[str, Any]) -> None:
    """Every batch item is one of the classes, keyed on eClass, each with what the batch
    checks: types, lengths, choices, minimum, formats, statuses, read-only fields."""
    schemas = document["components"]["schemas"]
    batch = _resolve(document, _body(document, "post", "/api/entity")["$ref"])
    assert batch["properties"]["entities"]["minItems"] == 1
    assert batch["properties"]["entities"]["items"]["allOf"] == [
        {"$ref": "#/components/schemas/EntityItem"}]
    item = schemas["EntityItem"]
    assert item["discriminator"]["propertyName"] == "eClass"
    assert set(item["discriminator"]["mapping"]) == {spec.name for spec in classes()}
    assert len(item["oneOf"]) == len(classes())
    sample = schemas["EntitySample"]
    assert sample["required"] == ["eClass"] and sample["additionalProperties"] is False
    properties = sample["properties"]
    assert properties["eClass"]["const"] == "Sample"
    assert properties["amount"]["minimum"] == 0
    assert properties["status"]["enum"] == list(existing_class("Sample").workflow.statuses)
    assert properties["dateTaken"]["format"] == "date"
    assert properties["name"] == {"type": "string", "maxLength": 255}
    assert properties["createdUtc"]["readOnly"] is True
    assert schemas["EntityFermentation"]["properties"]["startTime"]["format"] == "date-time"
    assert schemas["EntityRequest"]["properties"]["priority"]["enum"] == [
        "Low", "Normal", "High", "Urgent", None]
    user = schemas["EntityUser"]
    assert user["required"] == ["eClass", "id"]
    assert user["properties"]["password"]["minLength"] == MIN_PASSWORD_LENGTH


def test_storage_bodies_say_which_classes_and_slots(document: dict[str, Any]) -> None:
    """Check-in and check-out take a non-empty array of Samples and Plates; a position is
    a slot exactly as the server parses one."""
    schemas = document["components"]["schemas"]
    checkin = _body(document, "post", "/api/storage/location/{location_id}/checkin")
    assert checkin["minItems"] == 1
    stored = _resolve(document, checkin["items"]["$ref"])
    assert stored["properties"]["eClass"]["enum"] == ["Sample", "Plate"]
    slot = re.compile(stored["properties"]["position"]["pattern"])
    for text in ("A1", "b07", "ZZ999", "AAA1000", "A0", "A", "7", "ABCD1", "A12345", " A1"):
        assert bool(slot.search(text)) is (parse(text) is not None and text == text.strip())
    checkout = _body(document, "post", "/api/storage/location/checkout")
    assert checkout["minItems"] == 1
    assert schemas["ItemRef"]["properties"]["eClass"]["enum"] == ["Sample", "Plate"]


def test_password_rules_role_names_and_setting_names_are_stated(
        document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    change = schemas["PasswordChange"]["properties"]
    assert change["password"]["minLength"] == MIN_PASSWORD_LENGTH
    assert change["repeatPassword"]["minLength"] == MIN_PASSWORD_LENGTH
    assert schemas["RoleChange"]["properties"]["name"]["enum"] == list(BUILT_IN_ROLES)
    for method in ("get", "post"):
        (name,) = [parameter for parameter in document["paths"][
            "/api/project/{project_id}/settings/{settings_name}"][method]["parameters"]
            if parameter["name"] == "settings_name"]
        pattern = re.compile(name["schema"]["pattern"])
        assert pattern.search("layout.v2") and not pattern.search("a/b")


def test_login_body_schema_matches_the_endpoint(document: dict[str, Any]) -> None:
    """The documented body is the real one: its required fields are those login demands."""
    schema = document["paths"]["/api/auth/login"]["post"]["requestBody"]["content"][
        "application/json"]["schema"]
    login_schema = _resolve(document, schema["$ref"])
    assert set(login_schema["required"]) == {"username", "password"}
    assert "keepAlive" in login_schema["properties"]


def test_bad_credentials_give_the_documented_401_even_on_a_public_operation(
        client: FlaskClient, document: dict[str, Any]) -> None:
    response = client.get("/api/openapi.json", headers=bearer_header("not-a-token"))

    assert_problem(response, 401, "invalid_token")
    assert "401" in document["paths"]["/api/openapi.json"]["get"]["responses"]


def test_completeness_check_reports_an_undocumented_route(
        fresh_app: Callable[..., Flask]) -> None:
    """The contract test above can fail: a route without ``@endpoint`` is reported."""
    application = fresh_app()

    def undocumented() -> str:
        return "nobody wrote this down"

    @endpoint("A documented test route.", responses={204: "Done"}, public=True)
    def documented(item_id: int) -> tuple[str, int]:
        return "", 204

    application.add_url_rule("/api/test-undocumented", view_func=undocumented,
                             methods=["GET", "POST"])
    application.add_url_rule("/api/test-documented/<int:item_id>", view_func=documented,
                             methods=["DELETE"])
    document = application.test_client().get("/api/openapi.json").get_json()

    assert undocumented_operations(application, document) == [
        "GET /api/test-undocumented", "POST /api/test-undocumented"]
    operation = document["paths"]["/api/test-documented/{item_id}"]["delete"]
    assert operation["parameters"] == [{"name": "item_id", "in": "path", "required": True,
                                        "schema": {"type": "integer"}}]
