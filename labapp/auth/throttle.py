"""Failed-login throttling per username and per client address, shared by all workers.

The answer is the same whether or not the username exists, so throttling reveals nothing.
"""
from __future__ import annotations

from datetime import timedelta

from flask import current_app
from sqlalchemy import delete, func, select

from labapp.db import db
from labapp.errors import TooManyRequests
from labapp.model import LoginFailure
from labapp.model.types import utc_now


def _limits() -> tuple[int, timedelta]:
    settings = current_app.config["LABAPP"]
    return settings["LOGIN_MAX_FAILURES"], timedelta(seconds=settings["LOGIN_WINDOW_SECONDS"])


def check(username: str, address: str) -> None:
    """Raise :class:`TooManyRequests` (with Retry-After) when either key is over its limit."""
    limit, window = _limits()
    now = utc_now()
    since = now - window
    for column, key in ((LoginFailure.username, username), (LoginFailure.address, address)):
        count, oldest = db.session.execute(
            select(func.count(), func.min(LoginFailure.at_utc))
            .where(column == key, LoginFailure.at_utc > since)).one()
        if count >= limit:
            retry_after = int((oldest + window - now).total_seconds()) + 1
            raise TooManyRequests("Too many failed login attempts; try again later.",
                                  retry_after=retry_after)


def record_failure(username: str, address: str) -> None:
    """Remember one failed attempt and forget those older than the window."""
    _, window = _limits()
    now = utc_now()
    db.session.execute(delete(LoginFailure).where(LoginFailure.at_utc <= now - window))
    db.session.add(LoginFailure(username=username[:255], address=address[:64], at_utc=now))
    db.session.flush()


def clear(username: str) -> None:
    """Forget the failures of a username after a successful login."""
    db.session.execute(delete(LoginFailure).where(LoginFailure.username == username))
