"""Published rate limits (issue 36 §4, decisions §18): the RateLimit fields on every /api
answer, 429 ``rate_limited`` with Retry-After, buckets per token, per user and per address,
refilled as the clock moves, the budget endpoint, and what a refused request leaves."""
from __future__ import annotations

import functools
import secrets
import threading
from collections.abc import Callable, Iterator

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import event, func, select
from sqlalchemy.exc import OperationalError

from labapp.auth import ratelimits
from labapp.db import db, table_of
from labapp.model import PersonalAccessToken, RateLimitBucket
from tests.conftest import (
    PASSWORD,
    ApiClient,
    basic_header,
    bearer_header,
    login,
)
from tests.helpers.ratelimits import fields_of, limits

Maker = Callable[..., str]


def someone(make_user: Maker) -> str:
    """A user of this test alone (buckets outlive the test's rollback on PostgreSQL)."""
    return make_user(f"rl{secrets.token_hex(5)}")


def pat_header(app: Flask, username: str) -> dict[str, str]:
    """Basic ``username:PAT…`` for a new token of ``username`` (made with the limits off)."""
    client = app.test_client()
    tokens = login(client, username)
    created = client.post("/api/user/pat", json={"name": secrets.token_hex(4)},
                          headers=bearer_header(tokens["accessToken"]))
    assert created.status_code == 201, created.get_json()
    return basic_header(username, created.get_json()["value"])


def anonymous(app: Flask) -> FlaskClient:
    """A client from an address of its own (buckets outlive the test on PostgreSQL)."""
    address = f"10.{secrets.randbelow(256)}.{secrets.randbelow(256)}.{secrets.randbelow(256)}"
    return from_address(app, address)


def from_address(app: Flask, address: str) -> FlaskClient:
    client = app.test_client()
    client.environ_base["REMOTE_ADDR"] = address
    return client


def test_the_fields_count_down_and_then_429_with_retry_after(app: Flask, make_user: Maker
                                                              ) -> None:
    username = someone(make_user)
    headers = pat_header(app, username)
    client = app.test_client()
    with limits(app, window=10, token=5, user=50):
        seen = []
        for _ in range(5):
            response = client.get("/api/user/pat", headers=headers)
            assert response.status_code == 200
            fields = fields_of(response.headers)
            assert fields.policy == {"token": {"q": 5, "w": 10}, "user": {"q": 50, "w": 10}}
            seen.append(fields.state["token"]["r"])
        assert seen == [4, 3, 2, 1, 0]
        assert fields.state["token"]["t"] == 2  # one request costs 10 s / 5
        assert fields.state["user"] == {"r": 45, "t": 1}
        refused = client.get("/api/user/pat", headers=headers)
    assert refused.status_code == 429
    assert refused.mimetype == "application/problem+json"
    body = refused.get_json()
    assert body["code"] == "rate_limited" and body["status"] == 429
    assert "token" in body["detail"]
    assert refused.headers["Retry-After"] == "2"
    # The reset of a refused answer names the same moment as Retry-After (the draft's SHOULD).
    assert fields_of(refused.headers).state["token"] == {"r": 0, "t": 2}


def test_the_bucket_refills_as_the_clock_moves(app: Flask, make_user: Maker) -> None:
    headers = pat_header(app, someone(make_user))
    client = app.test_client()
    with limits(app, window=10, token=5) as clock:
        for _ in range(5):
            assert client.get("/api/user/pat", headers=headers).status_code == 200
        assert client.get("/api/user/pat", headers=headers).status_code == 429
        clock.advance(1.9)
        early = client.get("/api/user/pat", headers=headers)
        assert early.status_code == 429 and early.headers["Retry-After"] == "1"
        clock.advance(0.1)
        again = client.get("/api/user/pat", headers=headers)
        assert again.status_code == 200
        assert fields_of(again.headers).state["token"]["r"] == 0
        assert client.get("/api/user/pat", headers=headers).status_code == 429
        clock.advance(10)
        full = client.get("/api/user/pat", headers=headers)
        assert fields_of(full.headers).state["token"] == {"r": 4, "t": 2}


def test_each_token_has_its_own_bucket(app: Flask, make_user: Maker) -> None:
    username = someone(make_user)
    first, second = pat_header(app, username), pat_header(app, username)
    client = app.test_client()
    with limits(app, token=3, user=100):
        for _ in range(3):
            assert client.get("/api/user/pat", headers=first).status_code == 200
        assert client.get("/api/user/pat", headers=first).status_code == 429
        other = client.get("/api/user/pat", headers=second)
    assert other.status_code == 200
    assert fields_of(other.headers).state["token"]["r"] == 2


def test_a_login_s_bearer_tokens_share_one_bucket(app: Flask, make_user: Maker) -> None:
    username = someone(make_user)
    client = app.test_client()
    tokens = login(client, username)
    client.delete_cookie("labapp_session")
    with limits(app, token=2, user=100):
        assert client.get("/api/user/pat",
                          headers=bearer_header(tokens["accessToken"])).status_code == 200
        refreshed = client.post("/api/auth/refresh",
                                json={"refreshToken": tokens["refreshToken"]})
        assert refreshed.status_code == 200
        renewed = bearer_header(refreshed.get_json()["accessToken"])
        second = client.get("/api/user/pat", headers=renewed)
        assert second.status_code == 200
        assert fields_of(second.headers).state["token"]["r"] == 0
        assert client.get("/api/user/pat", headers=renewed).status_code == 429
        # Another login of the same user is another token.
        elsewhere = bearer_header(login(app.test_client(), username)["accessToken"])
        assert client.get("/api/user/pat", headers=elsewhere).status_code == 200


def test_the_user_limit_spans_tokens_passwords_and_cookies(app: Flask, make_user: Maker
                                                           ) -> None:
    username = someone(make_user)
    first, second = pat_header(app, username), pat_header(app, username)
    browser = app.test_client()
    login(browser, username)
    client = app.test_client()
    with limits(app, token=100, user=4):
        answers = [client.get("/api/user/pat", headers=first),
                   client.get("/api/user/pat", headers=second),
                   client.get("/api/user/pat", headers=basic_header(username, PASSWORD)),
                   browser.get("/api/user/pat")]
        assert [answer.status_code for answer in answers] == [200, 200, 200, 200]
        assert [fields_of(answer.headers).state["user"]["r"] for answer in answers] == [
            3, 2, 1, 0]
        # A cookie or a password is counted against the user only.
        assert set(fields_of(answers[2].headers).policy) == {"user"}
        assert set(fields_of(answers[3].headers).policy) == {"user"}
        refused = [client.get("/api/user/pat", headers=first),
                   client.get("/api/user/pat", headers=basic_header(username, PASSWORD)),
                   browser.get("/api/user/pat")]
        assert [answer.status_code for answer in refused] == [429, 429, 429]
        assert {answer.get_json()["code"] for answer in refused} == {"rate_limited"}
        # Another user is not affected.
        assert client.get("/api/user/pat", headers=basic_header(
            someone(make_user), PASSWORD)).status_code == 200


def test_zero_turns_a_limit_off(app: Flask, make_user: Maker) -> None:
    username = someone(make_user)
    headers = pat_header(app, username)
    client = app.test_client()
    with limits(app, token=0, user=2):
        answers = [client.get("/api/user/pat", headers=headers) for _ in range(2)]
        assert set(fields_of(answers[0].headers).policy) == {"user"}
        assert client.get("/api/user/pat", headers=headers).status_code == 429
    with limits(app, token=0, user=0, address=0):
        for _ in range(20):
            response = client.get("/api/user/pat", headers=headers)
            assert response.status_code == 200
            assert "RateLimit" not in response.headers
            assert "RateLimit-Policy" not in response.headers


def test_anonymous_callers_are_limited_by_address_logins_included(app: Flask,
                                                                   make_user: Maker) -> None:
    username = someone(make_user)
    client = anonymous(app)
    with limits(app, address=3, user=100):
        wrong = client.post("/api/auth/login", json={"username": username,
                                                     "password": "not the password"})
        assert wrong.status_code == 401
        assert fields_of(wrong.headers).state["address"]["r"] == 2
        assert client.get("/api/auth/user").status_code == 200
        right = client.post("/api/auth/login", json={"username": username,
                                                     "password": PASSWORD})
        assert right.status_code == 200
        client.delete_cookie("labapp_session")  # anonymous again, from the same address
        refused = client.post("/api/auth/login", json={"username": username,
                                                       "password": PASSWORD})
        assert refused.status_code == 429
        assert refused.get_json()["code"] == "rate_limited"
        # Another address is another bucket; the signed-in user is counted as the user.
        assert anonymous(app).get("/api/auth/user").status_code == 200
        signed_in = app.test_client().get(
            "/api/user/pat", headers=bearer_header(right.get_json()["accessToken"]))
        assert signed_in.status_code == 200


def test_refused_credentials_and_unknown_paths_carry_the_fields(app: Flask) -> None:
    client = anonymous(app)
    with limits(app, address=3, user=100, token=100):
        bad_token = client.get("/api/user/pat", headers=bearer_header("not-a-token"))
        assert bad_token.status_code == 401
        assert fields_of(bad_token.headers).state["address"]["r"] == 2
        unknown = client.get("/api/no/such/endpoint")
        assert unknown.status_code == 404
        assert fields_of(unknown.headers).state["address"]["r"] == 1
        nul = client.get("/api/auth/user?x=%00")
        assert nul.status_code == 400
        assert fields_of(nul.headers).state["address"]["r"] == 0
        # Credentials refused before the limiter ran are still counted, and refused.
        over = client.get("/api/user/pat", headers=bearer_header("not-a-token"))
    assert over.status_code == 429
    assert over.get_json()["code"] == "rate_limited"
    assert int(over.headers["Retry-After"]) >= 1


def test_an_error_answer_still_costs_a_request(app: Flask, make_user: Maker) -> None:
    """The charge is not part of the request's unit of work: a 404 rolls that back, not the
    count."""
    headers = pat_header(app, someone(make_user))
    client = app.test_client()
    with limits(app, token=10):
        first = client.get("/api/entity/Sample/SAM99999999", headers=headers)
        second = client.get("/api/entity/Sample/SAM99999999", headers=headers)
    assert first.status_code == second.status_code == 404
    assert [fields_of(answer.headers).state["token"]["r"] for answer in (first, second)] == [
        9, 8]


def test_a_refused_request_does_nothing(app: Flask, make_user: Maker) -> None:
    username = someone(make_user)
    headers = pat_header(app, username)
    client = app.test_client()
    with app.app_context():
        tokens_before = db.session.scalar(select(func.count()).select_from(PersonalAccessToken)
                                          .where(PersonalAccessToken.user_id == username))
    with limits(app, token=1):
        assert client.get("/api/user/pat", headers=headers).status_code == 200
        refused = client.post("/api/user/pat", json={"name": "refused"}, headers=headers)
    assert refused.status_code == 429
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(PersonalAccessToken)
                                 .where(PersonalAccessToken.user_id == username)
                                 ) == tokens_before


class ViewsRun:
    """Counts the runs of the view of one route (the wrapper keeps the view's declarations)
    and the threads each limiter statement ran on, while in use."""

    def __init__(self, app: Flask, monkeypatch: pytest.MonkeyPatch, method: str,
                 path: str) -> None:
        self.runs = 0
        self.charging_threads: list[int] = []
        endpoint, _ = app.url_map.bind("localhost").match(path, method)
        view = app.view_functions[endpoint]

        @functools.wraps(view)
        def counted(*args: object, **kwargs: object) -> object:
            self.runs += 1
            return view(*args, **kwargs)

        monkeypatch.setitem(app.view_functions, endpoint, counted)
        self._engine = ratelimits.limiter(app).engine
        event.listen(self._engine, "before_cursor_execute", self._charged)

    def _charged(self, *_: object) -> None:
        self.charging_threads.append(threading.get_ident())

    def close(self) -> None:
        event.remove(self._engine, "before_cursor_execute", self._charged)


@pytest.fixture
def pat_list_runs(app: Flask, monkeypatch: pytest.MonkeyPatch) -> Iterator[ViewsRun]:
    """The runs of ``GET /api/user/pat``'s view."""
    runs = ViewsRun(app, monkeypatch, "GET", "/api/user/pat")
    yield runs
    runs.close()


def test_a_read_is_charged_beside_its_view_and_a_refused_caller_before_it(
        app: Flask, make_user: Maker, pat_list_runs: ViewsRun) -> None:
    """A read's charge runs on another thread while its view runs; once refused, the
    caller's reads are charged first, on the request's thread, and their view is not run
    until Retry-After has passed."""
    headers = pat_header(app, someone(make_user))
    client = app.test_client()
    here = threading.get_ident()
    with limits(app, window=10, token=2) as clock:
        answers = [client.get("/api/user/pat", headers=headers) for _ in range(3)]
        assert [answer.status_code for answer in answers] == [200, 200, 429]
        assert pat_list_runs.runs == 3  # the refused read ran beside its charge
        assert here not in pat_list_runs.charging_threads
        assert answers[2].headers["Retry-After"] == "5"
        assert fields_of(answers[2].headers).state["token"] == {"r": 0, "t": 5}
        assert answers[2].get_json()["code"] == "rate_limited"

        pat_list_runs.charging_threads.clear()
        again = client.get("/api/user/pat", headers=headers)
        assert again.status_code == 429 and again.headers["Retry-After"] == "5"
        assert pat_list_runs.runs == 3  # refused before its view
        assert pat_list_runs.charging_threads == [here]

        clock.advance(5)
        pat_list_runs.charging_threads.clear()
        after = client.get("/api/user/pat", headers=headers)
        assert after.status_code == 200 and pat_list_runs.runs == 4
        assert here not in pat_list_runs.charging_threads


def test_a_write_is_charged_before_its_view(app: Flask, make_user: Maker,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    headers = pat_header(app, someone(make_user))
    client = app.test_client()
    runs = ViewsRun(app, monkeypatch, "POST", "/api/user/pat")
    try:
        with limits(app, window=10, token=1):
            made = client.post("/api/user/pat", json={"name": "first"}, headers=headers)
            refused = client.post("/api/user/pat", json={"name": "second"}, headers=headers)
    finally:
        runs.close()
    assert (made.status_code, refused.status_code) == (201, 429)
    assert runs.runs == 1
    assert set(runs.charging_threads) == {threading.get_ident()}


def test_a_failed_charge_beside_a_read_is_answered_like_one_before_it(
        app: Flask, make_user: Maker, monkeypatch: pytest.MonkeyPatch,
        pat_list_runs: ViewsRun) -> None:
    """The limiter's database busy under a read: the read's answer is replaced by the house
    problem a charge before the view gets (503 ``database_busy``), not a 500."""
    headers = pat_header(app, someone(make_user))
    limiter = ratelimits.limiter(app)

    def busy(_charges: object) -> ratelimits.Outcome:
        raise OperationalError("INSERT INTO rate_limit_bucket", {},
                               Exception("database is locked"))

    monkeypatch.setattr(limiter, "charge", busy)
    with limits(app, token=10):
        read = app.test_client().get("/api/user/pat", headers=headers)
        write = app.test_client().post("/api/user/pat", json={"name": "x"}, headers=headers)
    assert pat_list_runs.runs == 1
    for answer in (read, write):
        assert answer.status_code == 503 and answer.mimetype == "application/problem+json"
        assert answer.get_json()["code"] == "database_busy"
        assert "RateLimit" not in answer.headers


def test_pages_are_not_limited(app: Flask) -> None:
    client = anonymous(app)
    with limits(app, address=1):
        for _ in range(5):
            page = client.get("/login")
            assert page.status_code == 200
            assert "RateLimit" not in page.headers


def test_the_budget_endpoint_answers_the_calling_credential(app: Flask, make_user: Maker
                                                            ) -> None:
    username = someone(make_user)
    headers = pat_header(app, username)
    client = app.test_client()
    with limits(app, window=60, token=30, user=600, address=5):
        client.get("/api/user/pat", headers=headers)
        response = client.get("/api/user/ratelimit", headers=headers)
        password = client.get("/api/user/ratelimit",
                              headers=basic_header(username, PASSWORD))
        nobody = anonymous(app).get("/api/user/ratelimit")
    assert response.status_code == 200
    assert response.get_json() == {"policies": [
        {"name": "token", "quota": 30, "windowSeconds": 60, "remaining": 28,
         "resetSeconds": 4},
        {"name": "user", "quota": 600, "windowSeconds": 60, "remaining": 598,
         "resetSeconds": 1}]}
    state = fields_of(response.headers).state
    assert [state["token"]["r"], state["user"]["r"]] == [28, 598]
    assert password.get_json()["policies"] == [
        {"name": "user", "quota": 600, "windowSeconds": 60, "remaining": 597,
         "resetSeconds": 1}]
    assert nobody.status_code == 401
    assert fields_of(nobody.headers).state["address"]["r"] == 4


def test_the_budget_endpoint_with_every_limit_off(api_as: Callable[..., ApiClient],
                                                  make_user: Maker) -> None:
    response = api_as(someone(make_user), "pat").get("/api/user/ratelimit")
    assert response.status_code == 200
    assert response.get_json() == {"policies": []}


@pytest.mark.parametrize("address", ["x" * 10_000, "1.2.3.4\x01<script>", "", "::1%eth0"])
def test_an_address_that_is_no_address_is_kept_as_a_digest(app: Flask, address: str) -> None:
    client = from_address(app, address)
    with limits(app, address=2):
        answers = [client.get("/api/auth/user") for _ in range(3)]
    assert [answer.status_code for answer in answers] == [200, 200, 429]


def test_full_buckets_are_pruned(app: Flask, make_user: Maker) -> None:
    headers = pat_header(app, someone(make_user))
    client = app.test_client()
    (token,) = client.get("/api/user/pat", headers=headers).get_json()
    limiter = ratelimits.limiter(app)
    table = table_of(RateLimitBucket)

    def kept() -> bool:
        with limiter.engine.connect() as connection:
            return connection.execute(select(table.c.key).where(
                table.c.key == f"pat:{token['id']}")).first() is not None

    with limits(app, window=10, token=5, user=50) as clock:
        client.get("/api/user/pat", headers=headers)
        assert kept()
        limiter.prune(clock.now)
        assert kept()  # not full yet
        clock.advance(2.5)
        assert limiter.prune(clock.now) >= 1
        assert not kept()
