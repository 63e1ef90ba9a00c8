"""Login throttling that cannot lock a lab out (issue 9 §2), through all four doors.

Every rule is checked through the login endpoint (``POST /api/auth/login``), Basic
``username:password``, Basic ``username:PAT`` and the login page. Failures are counted per
(username, client address), per address (a spray over many usernames) and per username (a
distributed guess at one account); a valid personal access token is never refused; a wrong
one counts like a wrong password; ``Retry-After`` says when the attempt would be let through.
"""
from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import pytest
from flask import Flask
from werkzeug.test import TestResponse

from labapp.access.actor import Actor
from labapp.auth import pats
from tests.auth.checks import (
    CLIENT_ADDRESS,
    database,
    failures_of,
    problem,
    seed_failures,
)
from tests.conftest import ADMIN_PASSWORD, PASSWORD, basic_header, csrf_of, run_init

DOORS = ("login", "basic", "pat", "page")
ELSEWHERE = "198.51.100.7"


@dataclass(frozen=True)
class Limits:
    pair: int
    address: int
    username: int
    window: timedelta


@pytest.fixture
def limits(app: Flask) -> Limits:
    settings = app.config["LABAPP"]
    return Limits(settings["LOGIN_MAX_FAILURES"], settings["LOGIN_MAX_FAILURES_PER_ADDRESS"],
                  settings["LOGIN_MAX_FAILURES_PER_USERNAME"],
                  timedelta(seconds=settings["LOGIN_WINDOW_SECONDS"]))


def test_the_test_settings_are_the_documented_defaults(limits: Limits) -> None:
    # The rules below rely on the wider limits being far above the per-pair one.
    assert (limits.pair, limits.address, limits.username) == (10, 100, 50)
    assert limits.window == timedelta(seconds=300)


def attempt(app: Flask, door: str, username: str, secret: str,
            address: str = CLIENT_ADDRESS) -> TestResponse:
    """One authentication attempt through ``door`` from ``address``."""
    client = app.test_client()
    client.environ_base["REMOTE_ADDR"] = address
    if door == "login":
        return client.post("/api/auth/login", json={"username": username, "password": secret})
    if door in ("basic", "pat"):
        return client.get("/api/auth/user", headers=basic_header(username, secret))
    client.get("/login")
    return client.post("/login", data={"username": username, "password": secret,
                                       "csrf_token": csrf_of(client)})


SUCCESS = {"login": 200, "basic": 200, "pat": 200, "page": 303}


def accepted(response: TestResponse, door: str) -> bool:
    return response.status_code == SUCCESS[door]


def refused(response: TestResponse) -> int:
    """Assert a 429 with ``Retry-After`` and answer its seconds."""
    assert response.status_code == 429, response.get_data(as_text=True)
    if response.mimetype == "application/problem+json":
        problem(response, 429, "too_many_requests")
    else:
        assert "Too many failed login attempts" in response.get_data(as_text=True)
    return int(response.headers["Retry-After"])


def rejected(response: TestResponse) -> None:
    assert response.status_code == 401, response.get_data(as_text=True)


@dataclass
class Secrets:
    """The right and a wrong secret of each user for each door (PAT door: a PAT)."""

    app: Flask
    pats: dict[str, str]

    def right(self, door: str, username: str) -> str:
        return self.pats[username] if door == "pat" else PASSWORD

    @staticmethod
    def wrong(door: str) -> str:
        return "PAT" + secrets.token_urlsafe(30) if door == "pat" else "wrong password!"


@pytest.fixture
def keys(app: Flask, make_user: Callable[..., str]) -> Secrets:
    """alice and bob, each with a personal access token."""
    values = {}
    for username in ("alice", "bob"):
        make_user(username)
        with database(app):
            values[username] = pats.create(Actor(user_id=username), "script", None).value
    return Secrets(app, values)


# ---- per (username, address) ------------------------------------------------------------------

@pytest.mark.parametrize("door", DOORS)
def test_failures_of_a_username_from_an_address_are_limited(app: Flask, keys: Secrets,
                                                            limits: Limits, door: str) -> None:
    seed_failures(app, limits.pair - 1, username="alice")
    rejected(attempt(app, door, "alice", keys.wrong(door)))  # the last failure allowed
    assert failures_of(app, "alice") == limits.pair

    assert 0 < refused(attempt(app, door, "alice", keys.wrong(door))) \
        <= limits.window.total_seconds()
    assert failures_of(app, "alice") == limits.pair  # a refused attempt is no failure
    if door != "pat":  # the right password too
        refused(attempt(app, door, "alice", keys.right(door, "alice")))


@pytest.mark.parametrize("door", DOORS)
def test_the_same_username_from_another_address_is_not_refused(app: Flask, keys: Secrets,
                                                                limits: Limits,
                                                                door: str) -> None:
    seed_failures(app, limits.pair, username="alice")

    assert accepted(attempt(app, door, "alice", keys.right(door, "alice"), ELSEWHERE), door)


@pytest.mark.parametrize("door", DOORS)
def test_one_users_failures_never_refuse_another_user_at_the_same_address(
        app: Flask, keys: Secrets, limits: Limits, door: str) -> None:
    # A script with a stale password behind the lab's proxy ...
    seed_failures(app, limits.pair, username="alice")
    refused(attempt(app, door, "alice", keys.wrong(door)))

    # ... does not stop anyone else behind it.
    assert accepted(attempt(app, door, "bob", keys.right(door, "bob")), door)
    rejected(attempt(app, door, "bob", keys.wrong(door)))  # checked, not refused


# ---- per address (a spray) --------------------------------------------------------------------

def spray(app: Flask, count: int, address: str = CLIENT_ADDRESS) -> None:
    """``count`` failures from ``address``, one per username, so no pair is near its limit."""
    for number in range(count):
        seed_failures(app, 1, username=f"guess{number}", address=address)


@pytest.mark.parametrize("door", DOORS)
def test_an_address_spraying_many_usernames_is_refused(app: Flask, keys: Secrets,
                                                       limits: Limits, door: str) -> None:
    spray(app, limits.address - 1)
    rejected(attempt(app, door, "one-more-guess", keys.wrong(door)))

    assert refused(attempt(app, door, "bob", keys.wrong(door))) > 0
    if door != "pat":  # even the right password of a user who never failed
        refused(attempt(app, door, "bob", keys.right(door, "bob")))
    # Other addresses are not affected.
    assert accepted(attempt(app, door, "bob", keys.right(door, "bob"), ELSEWHERE), door)


@pytest.mark.parametrize("door", DOORS)
def test_below_the_address_limit_other_users_are_let_in(app: Flask, keys: Secrets,
                                                        limits: Limits, door: str) -> None:
    # Far more failures than one username may have, but spread over users: a lab, not a spray.
    spray(app, limits.address - 1)

    assert accepted(attempt(app, door, "bob", keys.right(door, "bob")), door)


# ---- per username (a distributed guess) -------------------------------------------------------

@pytest.mark.parametrize("door", DOORS)
def test_a_username_guessed_from_many_addresses_is_refused_everywhere(
        app: Flask, keys: Secrets, limits: Limits, door: str) -> None:
    for number in range(limits.username - 1):
        seed_failures(app, 1, username="alice", address=f"203.0.113.{number}")
    rejected(attempt(app, door, "alice", keys.wrong(door), "203.0.113.250"))

    assert refused(attempt(app, door, "alice", keys.wrong(door), ELSEWHERE)) > 0
    if door != "pat":
        refused(attempt(app, door, "alice", keys.right(door, "alice"), ELSEWHERE))
    # Other users at those addresses are not affected.
    assert accepted(attempt(app, door, "bob", keys.right(door, "bob"), ELSEWHERE), door)


# ---- personal access tokens -------------------------------------------------------------------

def test_a_valid_pat_is_never_refused(app: Flask, keys: Secrets, limits: Limits) -> None:
    seed_failures(app, limits.pair, username="alice")
    spray(app, limits.address)
    for number in range(limits.username):
        seed_failures(app, 1, username="alice", address=f"203.0.113.{number}")
    refused(attempt(app, "basic", "alice", PASSWORD))

    response = attempt(app, "pat", "alice", keys.right("pat", "alice"))

    assert response.status_code == 200
    assert response.get_json()["method"] == "pat"


def test_a_wrong_pat_counts_as_a_failed_login(app: Flask, keys: Secrets,
                                              limits: Limits) -> None:
    for _ in range(2):
        rejected(attempt(app, "pat", "alice", keys.wrong("pat")))

    assert failures_of(app, "alice") == 2
    # It counts toward the same limit as passwords, at every door.
    seed_failures(app, limits.pair - 2, username="alice")
    refused(attempt(app, "login", "alice", PASSWORD))


# ---- Retry-After ------------------------------------------------------------------------------

@pytest.mark.parametrize("door", DOORS)
def test_retry_after_is_the_time_until_the_attempt_would_pass(app: Flask, keys: Secrets,
                                                              limits: Limits,
                                                              door: str) -> None:
    # Five failures over the limit: six must leave the window. The five oldest leave in
    # 10 s, the sixth in 200 s.
    window = limits.window
    seed_failures(app, 5, username="alice", age=window - timedelta(seconds=10))
    seed_failures(app, limits.pair, username="alice", age=window - timedelta(seconds=200))

    assert 199 <= refused(attempt(app, door, "alice", keys.wrong(door))) <= 201


@pytest.mark.parametrize("door", DOORS)
def test_retry_after_waits_for_every_scope_that_refuses(app: Flask, keys: Secrets,
                                                        limits: Limits, door: str) -> None:
    # alice's own failures leave in 30 s, but the address stays at its limit until the
    # failure of another username leaves, in 120 s.
    window = limits.window
    seed_failures(app, limits.pair, username="alice", age=window - timedelta(seconds=30))
    seed_failures(app, 1, username="late-guess", age=window - timedelta(seconds=120))
    spray(app, limits.address - 1)

    assert 119 <= refused(attempt(app, door, "alice", keys.wrong(door))) <= 121


# ---- settings ---------------------------------------------------------------------------------

def test_the_wider_limits_are_settings(fresh_app: Callable[..., Flask]) -> None:
    small = fresh_app(LOGIN_MAX_FAILURES=2, LOGIN_MAX_FAILURES_PER_ADDRESS=3,
                      LOGIN_MAX_FAILURES_PER_USERNAME=4)
    run_init(small)
    for number in range(3):
        rejected(attempt(small, "login", f"guess{number}", "wrong password!"))
    refused(attempt(small, "login", "admin", ADMIN_PASSWORD))
    for number in range(4):
        rejected(attempt(small, "login", "someone", "wrong password!", f"203.0.113.{number}"))
    refused(attempt(small, "login", "someone", "wrong password!", ELSEWHERE))


def test_a_very_high_per_pair_limit_switches_every_scope_off(
        fresh_app: Callable[..., Flask]) -> None:
    # How a test application turns throttling off (README, Settings).
    unthrottled = fresh_app(LOGIN_MAX_FAILURES=1_000_000_000)
    run_init(unthrottled)
    seed_failures(unthrottled, 150, username="admin")
    for number in range(120):
        seed_failures(unthrottled, 1, username=f"guess{number}", address=ELSEWHERE)

    rejected(attempt(unthrottled, "login", "admin", "wrong password!", ELSEWHERE))
    assert accepted(attempt(unthrottled, "page", "admin", ADMIN_PASSWORD,
                            ELSEWHERE), "page")
