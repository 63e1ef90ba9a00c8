"""Fixtures of the authentication tests."""
from __future__ import annotations

from collections.abc import Callable

import pytest
from flask import Flask
from flask.testing import FlaskClient

from labapp.model import User
from tests.auth.checks import database


@pytest.fixture
def alice(make_user: Callable[..., str]) -> str:
    return make_user("alice")


@pytest.fixture
def bob(make_user: Callable[..., str]) -> str:
    return make_user("bob")


@pytest.fixture
def bare_client(app: Flask) -> FlaskClient:
    """A client without a cookie jar: every credential is sent explicitly."""
    return app.test_client(use_cookies=False)


@pytest.fixture
def deactivate(app: Flask) -> Callable[[str], None]:
    """``deactivate("alice")`` sets the user inactive, as an administrator would."""

    def run(username: str) -> None:
        with database(app) as session:
            session.get(User, username).is_active = False

    return run
