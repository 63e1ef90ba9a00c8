"""Helpers of the second-factor tests: enrolment straight through the service, the codes of
a secret at a given time step, and the sign-in events recorded."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pyotp
from flask import Flask
from sqlalchemy import select

from labapp.auth import second_factor
from labapp.db import db
from labapp.model import SignInEvent
from labapp.model.types import utc_now
from tests.auth.checks import database


def code(secret: str, steps_ahead: int = 0) -> str:
    """The code of ``secret`` now, or ``steps_ahead`` 30-second steps later (a second code
    usable after the current one was used up)."""
    totp = pyotp.TOTP(secret)
    return totp.generate_otp(totp.timecode(utc_now()) + steps_ahead)


def enrol(app: Flask, username: str) -> tuple[str, list[str]]:
    """Give ``username`` a confirmed second factor; answer its secret and recovery codes.

    The confirming code is the previous step's, so that the current one is still unused."""
    with database(app):
        secret = second_factor.begin_enrolment(username)
    with database(app):
        codes = second_factor.confirm_enrolment(username, code(secret, -1))
    return secret, codes


def events_of(app: Flask, username: str) -> list[SignInEvent]:
    """The sign-in events whose username or account is ``username``, oldest first."""
    with app.app_context():
        return list(db.session.scalars(
            select(SignInEvent).where((SignInEvent.username == username)
                                      | (SignInEvent.user_id == username))
            .order_by(SignInEvent.id)))


@contextmanager
def required(app: Flask, who: str) -> Iterator[None]:
    """``REQUIRE_SECOND_FACTOR = who`` for the length of the block."""
    settings = app.config["LABAPP"]
    before = settings["REQUIRE_SECOND_FACTOR"]
    settings["REQUIRE_SECOND_FACTOR"] = who
    try:
        yield
    finally:
        settings["REQUIRE_SECOND_FACTOR"] = before


def wrong_code(secret: str) -> str:
    """Six digits that are not the current code of ``secret``."""
    return f"{(int(code(secret)) + 1) % 1_000_000:06d}"
