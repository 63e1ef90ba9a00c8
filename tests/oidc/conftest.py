"""Fixtures of the OpenID Connect tests: the real provider (one per test process, and one whose
clock is 15 minutes behind), and applications configured to sign in with it.

An application here is what an operator gets: ``flask init``, a department *Chemistry* made
through the API, then the app (re)started with ``LABAPP_OIDC_PROVIDERS`` naming a client
registered at the provider for its callback. The Flask test client's address is
``http://localhost``, so that is the registered redirect URI.
"""
from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from flask import Flask
from flask.testing import FlaskClient

from tests.conftest import ADMIN_PASSWORD, ApiClient, basic_header, build_app, dispose
from tests.oidc.provider_process import (
    Client,
    authorization_url,
    register_client,
    running_provider,
    sign_in_at_provider,
)

NAME = "testid"
APP_ORIGIN = "http://localhost"
CALLBACK = f"{APP_ORIGIN}/login/oidc/{NAME}/callback"
LOGIN_PAGE = f"{APP_ORIGIN}/login"


@pytest.fixture(scope="session")
def issuer() -> Iterator[str]:
    with running_provider() as url:
        yield url


@pytest.fixture(scope="session")
def late_issuer() -> Iterator[str]:
    """A provider whose clock is 15 minutes behind: its 5-minute ID tokens are expired (past
    the one minute of leeway) when they arrive."""
    with running_provider(clock_offset_seconds=-15 * 60) as url:
        yield url


def provider_settings(issuer_url: str, client: Client, **extra: Any) -> dict[str, Any]:
    """A provider entry of ``LABAPP_OIDC_PROVIDERS`` (creating users, groups mapped); the
    keys of ``extra`` replace those."""
    entry: dict[str, Any] = {
        "name": NAME, "displayName": "Test ID", "issuer": issuer_url,
        "clientId": client.client_id, "clientSecret": client.client_secret,
        "scopes": ["openid", "profile", "email", "groups"],
        "departmentClaim": "department", "roleClaim": "groups",
        "roles": {"lab-managers": ["DATA_MANAGER"]}, "defaultDepartment": "DEP00001",
        "createUsers": True}
    entry.update(extra)
    return entry


@dataclass
class OidcLab:
    """An application signing in with the provider, its Chemistry department, its client."""

    app: Flask
    chemistry: str
    client: Client
    issuer: str

    def sign_in(self, account: str, client: FlaskClient | None = None, *,
                next_path: str | None = None, at: requests.Session | None = None,
                tamper: Callable[[str], str] = lambda url: url) -> Any:
        """Sign in as ``account`` through the provider (in the browser session ``at``, else a
        new one); the application's answer to the callback. ``tamper`` may change the
        authorization URL on its way to the provider."""
        client = client or self.app.test_client()
        query = {"next": next_path} if next_path else None
        start = client.get(f"/login/oidc/{NAME}", query_string=query)
        with ExitStack() as closing:
            browser = at or closing.enter_context(requests.Session())
            back = sign_in_at_provider(browser, tamper(authorization_url(start)), account,
                                       stop_at=APP_ORIGIN)
        return client.get(back.removeprefix(APP_ORIGIN))


@pytest.fixture
def oidc_lab(fresh_app: Callable[..., Flask], issuer: str
             ) -> Iterator[Callable[..., OidcLab]]:
    """Factory: ``oidc_lab(createUsers=False, ...)`` an application whose provider entry has
    those keys changed (``issuer=`` another provider, ``settings=`` other settings)."""
    made: list[Flask] = []

    def make(*, issuer_url: str = issuer, settings: dict[str, Any] | None = None,
             **extra: Any) -> OidcLab:
        first = fresh_app(initialised=True)
        admin = ApiClient(first.test_client(), basic_header("admin", ADMIN_PASSWORD), "basic")
        created = admin.post("/api/entity", json={"entities": [
            {"eClass": "Department", "name": "Chemistry"}]})
        assert created.status_code == 201, created.get_json()
        chemistry = created.get_json()["entities"][0]["id"]
        client = register_client(issuer_url, [CALLBACK], [LOGIN_PAGE])
        extra.setdefault("departments", {"chemistry": chemistry})
        entry = provider_settings(issuer_url, client, **extra)
        app = build_app(Path(first.instance_path), first.config["SQLALCHEMY_DATABASE_URI"],
                        OIDC_PROVIDERS=json.dumps([entry]), **(settings or {}))
        made.append(app)
        return OidcLab(app, chemistry, client, issuer_url)

    yield make
    for app in made:
        dispose(app)


@pytest.fixture
def refusals(caplog: pytest.LogCaptureFixture, initialised_template: Any
             ) -> Callable[[], list[str]]:
    """``refusals()``: the reasons of the sign-ins refused so far in this test, from the
    sign-in log (``labapp.account.oidc.record_sign_in``). After the process's ``flask init``:
    Alembic's logging set-up replaces the handlers caplog listens with."""
    caplog.set_level(logging.INFO, logger="labapp.sign_in")

    def reasons() -> list[str]:
        found = (re.search(r"refused: .* reason=(\S+)", record.getMessage())
                 for record in caplog.records if record.name == "labapp.sign_in")
        return [match.group(1) for match in found if match]

    return reasons
