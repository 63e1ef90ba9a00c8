"""API rate limits in tests: turned on for a block on an application of the suite (which runs
without them), charged by a clock the test moves, and their fields read back as HTTP
structured fields by an implementation of their own (``http-sf``)."""
from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import http_sf
from flask import Flask

from labapp.auth import ratelimits
from labapp.auth.ratelimits import NANOSECONDS

QUOTAS = {"token": "RATE_LIMIT_PER_TOKEN", "user": "RATE_LIMIT_PER_USER",
          "address": "RATE_LIMIT_PER_ADDRESS"}


class StoppedClock:
    """A clock that stands still until the test moves it (nanoseconds since the epoch, from
    the real time at its start, so it never goes back behind buckets of earlier tests)."""

    def __init__(self) -> None:
        self.now = time.time_ns()

    def __call__(self) -> int:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += int(seconds * NANOSECONDS)


@contextmanager
def limits(app: Flask, *, window: int = 10, token: int = 0, user: int = 0,
           address: int = 0) -> Iterator[StoppedClock]:
    """Within the block ``app`` limits its API to these quotas per ``window`` seconds (0: no
    such limit), charged by the clock it yields."""
    settings = app.config["LABAPP"]
    names = ("RATE_LIMIT_WINDOW_SECONDS", *QUOTAS.values())
    before = {name: settings[name] for name in names}
    limiter = ratelimits.limiter(app)
    clock = StoppedClock()
    settings.update({"RATE_LIMIT_WINDOW_SECONDS": window, QUOTAS["token"]: token,
                     QUOTAS["user"]: user, QUOTAS["address"]: address})
    limiter.clock = clock
    try:
        yield clock
    finally:
        settings.update(before)
        limiter.clock = time.time_ns


@dataclass(frozen=True)
class Fields:
    """An answer's rate-limit fields, by policy name: ``{name: {"q": …, "w": …}}`` and
    ``{name: {"r": …, "t": …}}``."""

    policy: dict[str, dict[str, Any]]
    state: dict[str, dict[str, Any]]


def fields_of(headers: Any) -> Fields:
    """Parse ``RateLimit-Policy`` and ``RateLimit`` as structured-field lists (AssertionError
    when a member is not a String with parameters, as the draft requires)."""
    parsed = {}
    for name in ("RateLimit-Policy", "RateLimit"):
        members = http_sf.parse(headers[name].encode(), tltype="list")
        by_name = {}
        for value, parameters in members:
            assert isinstance(value, str), f"{name}: {value!r} is not an sf-string"
            by_name[value] = dict(parameters)
        parsed[name] = by_name
    return Fields(parsed["RateLimit-Policy"], parsed["RateLimit"])
