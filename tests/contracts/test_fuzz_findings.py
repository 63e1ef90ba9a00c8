"""The inputs the schemathesis contract test found, each as a plain test.

Every answer is a problem document whose status the OpenAPI document lists for the
operation, so a client (or the fuzzer) reading the document is never surprised.
"""
from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from tests.conftest import ADMIN_PASSWORD, ApiClient
from tests.contracts.problem import assert_problem


@pytest.fixture
def document(client: FlaskClient) -> dict[str, Any]:
    return client.get("/api/openapi.json").get_json()


@pytest.fixture
def admin(api_as: Callable[..., ApiClient]) -> ApiClient:
    return api_as("admin", password=ADMIN_PASSWORD)


def assert_documented(document: dict[str, Any], method: str, path: str,
                      response: TestResponse) -> None:
    responses = document["paths"][path][method]["responses"]
    assert str(response.status_code) in responses, (method, path, sorted(responses))


@pytest.mark.parametrize("body", [b"", b"refreshToken=x", b"--x\r\n\r\n--x--\r\n"])
def test_refresh_as_multipart_without_boundary_is_a_documented_problem(
        client: FlaskClient, document: dict[str, Any], body: bytes) -> None:
    # input_stream: given data, the test client would write its own multipart body with a
    # boundary; this sends the bytes and the bare media type as they are.
    response = client.post("/api/auth/refresh", input_stream=io.BytesIO(body),
                           content_length=len(body), content_type="multipart/form-data")
    assert response.request.headers["Content-Type"] == "multipart/form-data"

    if body:
        assert_problem(response, 415, "unsupported_media_type")
    else:  # no body at all: the refresh cookie is missing
        assert_problem(response, 401, "invalid_token")
    assert_documented(document, "post", "/api/auth/refresh", response)


def test_dataset_documents_its_array_body(admin: ApiClient, document: dict[str, Any]) -> None:
    """Undocumented, the body was left out by clients reading the document: 415."""
    body = document["paths"]["/api/query/dataset"]["post"]["requestBody"]
    assert body["required"] is True
    schema = body["content"]["application/json"]["schema"]
    assert schema["type"] == "array"
    assert {"$ref": "#/components/schemas/DatasetQuery"} in schema["items"]["allOf"]

    response = admin.post("/api/query/dataset")

    assert_problem(response, 415, "unsupported_media_type")
    assert_documented(document, "post", "/api/query/dataset", response)


@pytest.mark.parametrize(("method", "path", "body"), [
    ("put", "/api/user", {"userID": "nobody-here", "name": "Nobody"}),
    ("put", "/api/userRole/assign", {"userID": "nobody-here", "name": "DATA_MANAGER"}),
    ("put", "/api/userRole/revoke", {"userID": "nobody-here", "name": "DATA_MANAGER"}),
])
def test_an_unknown_user_in_the_body_is_a_documented_404(
        admin: ApiClient, document: dict[str, Any], method: str, path: str,
        body: dict[str, Any]) -> None:
    response = admin.open(method.upper(), path, json=body)

    assert_problem(response, 404, "not_found")
    assert_documented(document, method, path, response)
