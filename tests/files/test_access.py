"""Who may upload and download: the one visibility rule (decisions §5) applied to files.

An invisible file is 404 like an unknown one; an invisible subject is 400 like an unknown
one; a visible subject in a department the caller may only read is 403.
"""
from __future__ import annotations

from collections.abc import Callable

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.conftest import ApiClient
from tests.contracts.problem import assert_problem
from tests.files.conftest import closed, created, fetch, row_counts, save, upload


@pytest.fixture
def outsider(department: Callable[[str], str],
             member: Callable[..., ApiClient]) -> ApiClient:
    """``bob``, a plain user of another department (DEP00002), with no grants."""
    return member("bob", department_id=department("B"))


def test_anonymous_callers_get_401(api: ApiClient, client: FlaskClient) -> None:
    entity = created(upload(api, b"x", "a.txt"))

    for path in (f"/api/file/{entity['id']}", f"/api/file/{entity['id']}/metadata"):
        response = closed(client.get(path))
        assert_problem(response, 401, "not_authenticated")
        assert "WWW-Authenticate" in response.headers


def test_a_file_of_another_department_is_404(api: ApiClient, outsider: ApiClient) -> None:
    entity = created(upload(api, b"secret", "a.txt"))

    unknown = assert_problem(fetch(outsider, "FIL99999"), 404, "not_found")
    content = assert_problem(fetch(outsider, entity["id"]), 404, "not_found")
    metadata = assert_problem(outsider.get(f"/api/file/{entity['id']}/metadata"), 404,
                              "not_found")

    assert content["detail"] == unknown["detail"].replace("FIL99999", entity["id"])
    assert metadata["detail"] == content["detail"]
    assert fetch(api, entity["id"]).data == b"secret"


def test_an_invisible_subject_is_answered_like_an_unknown_one(
        app: Flask, api: ApiClient, outsider: ApiClient) -> None:
    sample = save(api, {"eClass": "Sample"})
    before = row_counts(app)

    hidden = assert_problem(upload(outsider, b"x", subjectID=sample["id"]), 400,
                            "invalid_entity", errors=True)
    unknown = assert_problem(upload(outsider, b"x", subjectID="SAM99999"), 400,
                             "invalid_entity", errors=True)

    assert hidden["errors"][0]["field"] == "subjectID"
    assert hidden["detail"] == unknown["detail"].replace("SAM99999", sample["id"])
    assert row_counts(app) == before


def test_read_access_lets_download_but_not_attach(
        app: Flask, api: ApiClient, outsider: ApiClient,
        grant: Callable[..., None]) -> None:
    sample = save(api, {"eClass": "Sample"})
    entity = created(upload(api, b"shared", "a.txt", subjectID=sample["id"]))
    grant("DEP00001", "Read", user="bob")
    before = row_counts(app)

    refused = upload(outsider, b"x", subjectID=sample["id"])

    body = assert_problem(refused, 403, "forbidden")
    assert "DEP00001" in body["detail"] and "entities" not in body["detail"]
    assert row_counts(app) == before
    assert fetch(outsider, entity["id"]).data == b"shared"
    assert outsider.get(f"/api/file/{entity['id']}/metadata").status_code == 200


def test_write_access_lets_attach_in_the_subjects_department(
        api: ApiClient, outsider: ApiClient, grant: Callable[..., None]) -> None:
    sample = save(api, {"eClass": "Sample"})
    grant("DEP00001", "Write", user="bob")

    entity = created(upload(outsider, b"x", subjectID=sample["id"]))

    assert (entity["departmentID"], entity["createdBy"]) == ("DEP00001", "bob")
    assert fetch(api, entity["id"]).data == b"x"


def test_a_file_without_subject_belongs_to_the_uploaders_home(
        api: ApiClient, outsider: ApiClient) -> None:
    entity = created(upload(outsider, b"x", "mine.txt"))

    assert entity["departmentID"] == "DEP00002"
    assert_problem(fetch(api, entity["id"]), 404, "not_found")
