"""Failed-login throttling in three scopes, shared by all workers (failures are rows).

Within one window (``LOGIN_WINDOW_SECONDS``) a password attempt is refused when any of the
scopes it belongs to has reached its limit:

- this username from this client address (``LOGIN_MAX_FAILURES``): someone, or a script
  with a stale password, getting one account wrong;
- this client address over all usernames (``LOGIN_MAX_FAILURES_PER_ADDRESS``, far higher):
  a spray of guesses over many accounts;
- this username over all addresses (``LOGIN_MAX_FAILURES_PER_USERNAME``, far higher): a
  distributed guess at one account.

So one user's wrong passwords never refuse another user behind the same proxy or NAT, unless
the address as a whole is spraying. The wider limits are never below the per-pair one, so a
very high ``LOGIN_MAX_FAILURES`` switches all three off. Only password checks are throttled:
a valid personal access token cannot be guessed and is never refused (the caller tries it
first). The answer is the same whether or not the username exists.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from flask import current_app
from sqlalchemy import ColumnElement, and_, delete, func, or_, select

from labapp.db import db
from labapp.errors import TooManyRequests
from labapp.model import LoginFailure
from labapp.model.types import utc_now

# The widths of the columns: a longer key is stored cut, so it is compared cut as well.
_USERNAME_WIDTH = 255
_ADDRESS_WIDTH = 64


@dataclass(frozen=True)
class _Limits:
    pair: int
    address: int
    username: int
    window: timedelta


def _limits() -> _Limits:
    settings = current_app.config["LABAPP"]
    pair = settings["LOGIN_MAX_FAILURES"]
    return _Limits(pair, max(pair, settings["LOGIN_MAX_FAILURES_PER_ADDRESS"]),
                   max(pair, settings["LOGIN_MAX_FAILURES_PER_USERNAME"]),
                   timedelta(seconds=settings["LOGIN_WINDOW_SECONDS"]))


def _keys(username: str, address: str) -> tuple[str, str]:
    return username[:_USERNAME_WIDTH], address[:_ADDRESS_WIDTH]


def check(username: str, address: str) -> int:
    """Raise :class:`TooManyRequests` when a scope of this attempt is at its limit.

    ``Retry-After`` says when every such scope is below its limit again. Otherwise answer
    how many failures this username has from this address within the window. One query.
    """
    username, address = _keys(username, address)
    limits = _limits()
    now = utc_now()
    since = now - limits.window
    pair = and_(LoginFailure.username == username, LoginFailure.address == address)
    scopes: tuple[tuple[ColumnElement[bool], int], ...] = (
        (pair, limits.pair),
        (LoginFailure.address == address, limits.address),
        (LoginFailure.username == username, limits.username))
    counts = db.session.execute(
        select(*(func.count().filter(condition) for condition, _ in scopes))
        .where(LoginFailure.at_utc > since,
               or_(LoginFailure.username == username, LoginFailure.address == address))).one()
    free_at = [_below_limit_at(condition, count - limit, since, limits.window)
               for (condition, limit), count in zip(scopes, counts, strict=True)
               if count >= limit]
    if free_at:
        raise TooManyRequests("Too many failed login attempts; try again later.",
                              retry_after=math.ceil((max(free_at) - now).total_seconds()))
    return counts[0]


def _below_limit_at(condition: ColumnElement[bool], excess: int, since: datetime,
                    window: timedelta) -> datetime:
    """When a scope ``excess`` failures over its limit (0 = at it) drops below the limit:
    the moment its ``excess + 1``-th oldest failure in the window leaves the window."""
    leaving = db.session.scalar(
        select(LoginFailure.at_utc).where(condition, LoginFailure.at_utc > since)
        .order_by(LoginFailure.at_utc).offset(excess).limit(1))
    if leaving is None:
        raise LookupError(f"fewer than {excess + 1} failures in the window since {since}")
    return leaving + window


def record_failure(username: str, address: str) -> None:
    """Remember one failed attempt and forget those older than the window."""
    username, address = _keys(username, address)
    now = utc_now()
    db.session.execute(delete(LoginFailure).where(LoginFailure.at_utc <= now - _limits().window))
    db.session.add(LoginFailure(username=username, address=address, at_utc=now))
    db.session.flush()


def clear(username: str, address: str) -> None:
    """Forget this username's failures from this address after it proved its password.

    Its failures from other addresses still count toward the username's limit, and other
    usernames' failures toward the address's.
    """
    username, address = _keys(username, address)
    db.session.execute(delete(LoginFailure).where(LoginFailure.username == username,
                                                  LoginFailure.address == address))
