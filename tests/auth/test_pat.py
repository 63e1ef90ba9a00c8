"""Personal access tokens: POST/GET /api/user/pat, DELETE /api/user/pat/{id}, use as Basic."""
from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import update

from labapp.model import PersonalAccessToken
from labapp.model.types import utc_now
from tests.auth.checks import database, error_fields, parse_utc, problem
from tests.conftest import ApiClient, basic_header

PAT_VALUE = re.compile(r"^PAT[A-Za-z0-9_-]{40}$")


@pytest.fixture
def owner(api_as: Callable[..., ApiClient], alice: str) -> ApiClient:
    """alice with a Bearer token (which, unlike Basic, costs no password hash per request)."""
    return api_as(alice, "bearer")


def create(caller: ApiClient, name: str = "script", **extra) -> dict:
    response = caller.post("/api/user/pat", json={"name": name, **extra})
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def use(client: FlaskClient, username: str, value: str):
    return client.get("/api/user/pat", headers=basic_header(username, value))


def test_create_answers_the_value_once(owner: ApiClient, bare_client: FlaskClient,
                                       alice: str) -> None:
    before = utc_now() - timedelta(seconds=1)

    created = create(owner, "nightly export")

    assert set(created) >= {"id", "name", "value", "createdUtc", "expiresUtc"}
    assert created["name"] == "nightly export"
    assert created["expiresUtc"] is None
    assert PAT_VALUE.match(created["value"]), created["value"]
    assert before <= parse_utc(created["createdUtc"]) <= utc_now()
    listed = owner.get("/api/user/pat").get_json()
    assert [pat["id"] for pat in listed] == [created["id"]]
    assert "value" not in listed[0]
    assert created["value"] not in owner.get("/api/user/pat").get_data(as_text=True)
    # The value authenticates as Basic username:PAT...
    me = bare_client.get("/api/auth/user", headers=basic_header(alice, created["value"]))
    assert me.get_json()["method"] == "pat"
    assert me.get_json()["contextUser"]["name"] == alice


def test_every_token_gets_a_new_value(owner: ApiClient) -> None:
    first, second = create(owner, "one"), create(owner, "two")

    assert first["value"] != second["value"]
    assert first["id"] != second["id"]


def test_the_list_is_newest_first(owner: ApiClient) -> None:
    ids = [create(owner, f"token {number}")["id"] for number in range(3)]

    listed = owner.get("/api/user/pat").get_json()

    assert [pat["id"] for pat in listed] == list(reversed(ids))
    assert [pat["name"] for pat in listed] == ["token 2", "token 1", "token 0"]
    assert set(listed[0]) == {"id", "name", "createdUtc", "expiresUtc", "lastUsedUtc"}


def test_the_list_shows_only_the_callers_tokens(owner: ApiClient, api_as: Callable,
                                                bob: str) -> None:
    create(owner, "alice's")
    bobs = api_as(bob, "basic")

    assert bobs.get("/api/user/pat").get_json() == []


def test_revoke_stops_the_token_at_once(owner: ApiClient, bare_client: FlaskClient,
                                        alice: str) -> None:
    created = create(owner)
    assert use(bare_client, alice, created["value"]).status_code == 200

    response = owner.delete(f"/api/user/pat/{created['id']}")

    assert response.status_code == 204
    assert response.get_data() == b""
    problem(use(bare_client, alice, created["value"]), 401, "invalid_credentials")
    assert owner.get("/api/user/pat").get_json() == []
    problem(owner.delete(f"/api/user/pat/{created['id']}"), 404, "not_found")


def test_revoke_leaves_the_other_tokens_working(owner: ApiClient, bare_client: FlaskClient,
                                                alice: str) -> None:
    kept, revoked = create(owner, "kept"), create(owner, "revoked")

    owner.delete(f"/api/user/pat/{revoked['id']}")

    assert use(bare_client, alice, kept["value"]).status_code == 200


def test_another_users_token_cannot_be_revoked(owner: ApiClient, api_as: Callable,
                                               bare_client: FlaskClient, alice: str,
                                               bob: str) -> None:
    created = create(owner)

    response = api_as(bob, "basic").delete(f"/api/user/pat/{created['id']}")

    # The same answer as for a token that does not exist: its existence is not revealed.
    foreign = problem(response, 404, "not_found")
    absent = problem(api_as(bob, "basic").delete("/api/user/pat/pat_doesnotexist"), 404,
                     "not_found")
    assert foreign["detail"].replace(created["id"], "?") == \
        absent["detail"].replace("pat_doesnotexist", "?")
    assert use(bare_client, alice, created["value"]).status_code == 200


@pytest.mark.parametrize("pat_id", ["pat_0000000000000000", "nonsense", "x" * 300])
def test_revoking_an_unknown_token_is_404(owner: ApiClient, pat_id: str) -> None:
    problem(owner.delete(f"/api/user/pat/{pat_id}"), 404, "not_found")


def test_a_token_only_works_with_its_owners_name(owner: ApiClient, bare_client: FlaskClient,
                                                 bob: str) -> None:
    created = create(owner)

    problem(use(bare_client, bob, created["value"]), 401, "invalid_credentials")
    problem(use(bare_client, "nobody", created["value"]), 401, "invalid_credentials")


def test_a_token_with_an_expiry_works_until_then(app: Flask, owner: ApiClient,
                                                 bare_client: FlaskClient, alice: str) -> None:
    expires = (utc_now() + timedelta(days=7)).replace(microsecond=0)
    created = create(owner, expiresUtc=expires.isoformat())
    assert parse_utc(created["expiresUtc"]) == expires
    assert use(bare_client, alice, created["value"]).status_code == 200

    with database(app) as session:
        session.execute(update(PersonalAccessToken)
                        .where(PersonalAccessToken.id == created["id"])
                        .values(expires_utc=utc_now() - timedelta(seconds=1)))

    problem(use(bare_client, alice, created["value"]), 401, "invalid_credentials")
    # An expired token is still listed (so its owner sees why it stopped working).
    assert [pat["id"] for pat in owner.get("/api/user/pat").get_json()] == [created["id"]]


def test_an_expiry_in_another_zone_is_stored_as_utc(owner: ApiClient) -> None:
    created = create(owner, expiresUtc="2099-06-01T14:00:00+02:00")

    assert created["expiresUtc"] == "2099-06-01T12:00:00.000Z"


def test_an_expiry_in_the_past_is_400(owner: ApiClient) -> None:
    past = (utc_now() - timedelta(minutes=1)).isoformat()

    body = problem(owner.post("/api/user/pat", json={"name": "old", "expiresUtc": past}), 400,
                   "invalid_input")

    assert error_fields(body) == {"expiresUtc"}
    assert owner.get("/api/user/pat").get_json() == []


def test_last_use_is_recorded(owner: ApiClient, bare_client: FlaskClient, alice: str) -> None:
    created = create(owner)
    assert owner.get("/api/user/pat").get_json()[0]["lastUsedUtc"] is None
    before = utc_now() - timedelta(seconds=1)

    use(bare_client, alice, created["value"])

    last_used = owner.get("/api/user/pat").get_json()[0]["lastUsedUtc"]
    assert last_used is not None
    assert before <= parse_utc(last_used) <= utc_now()


@pytest.mark.parametrize("payload, field", [
    ({}, "name"),
    ({"name": ""}, "name"),
    ({"name": None}, "name"),
    ({"name": 12}, "name"),
    ({"name": "n" * 256}, "name"),
    ({"name": "ok", "expiresUtc": "next tuesday"}, "expiresUtc"),
    ({"name": "ok", "expiresUtc": 1893456000}, "expiresUtc"),
    ({"name": "ok", "expiresUtc": "2099-01-01T00:00:00"}, "expiresUtc"),
    ({"name": "ok", "value": "PATmine"}, "value"),
])
def test_invalid_create_bodies_are_400(owner: ApiClient, payload: dict, field: str) -> None:
    body = problem(owner.post("/api/user/pat", json=payload), 400, "validation_failed")

    assert error_fields(body) == {field}
    assert owner.get("/api/user/pat").get_json() == []


@pytest.mark.parametrize("expires", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_an_expiry_out_of_range_in_utc_is_400(owner: ApiClient, expires: str) -> None:
    response = owner.post("/api/user/pat", json={"name": "ok", "expiresUtc": expires})

    assert response.status_code == 400, response.get_json()
    assert response.get_json()["errors"][0]["field"] == "expiresUtc"


def test_a_name_of_255_characters_is_accepted(owner: ApiClient) -> None:
    assert create(owner, "n" * 255)["name"] == "n" * 255


def test_create_needs_json(owner: ApiClient) -> None:
    problem(owner.post("/api/user/pat", data={"name": "form"}), 415, "unsupported_media_type")


@pytest.mark.parametrize("verb, path", [("get", "/api/user/pat"), ("post", "/api/user/pat"),
                                        ("delete", "/api/user/pat/pat_0000000000000000")])
def test_pat_endpoints_need_authentication(bare_client: FlaskClient, verb: str,
                                           path: str) -> None:
    response = getattr(bare_client, verb)(path, json={"name": "anonymous"})

    problem(response, 401, "not_authenticated")


def test_a_pat_can_manage_tokens_too(api_as: Callable, alice: str) -> None:
    caller = api_as(alice, "pat")

    created = create(caller, "made with a PAT")

    assert caller.delete(f"/api/user/pat/{created['id']}").status_code == 204
