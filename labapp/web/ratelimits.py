"""The API's published rate limits (decisions §18, docs/decisions/rate-limits.md): every
``/api`` request is counted once its caller is known, before its view (beside it when it
only reads) and outside its unit of work, and every ``/api`` answer says what is left.

Who is counted where:

- a personal access token, or one login's Bearer tokens: the ``token`` bucket of that token
  or login, and the ``user`` bucket of its owner;
- a browser session cookie or a Basic password: the ``user`` bucket only;
- no credentials, or credentials refused (401 before the limiter ran): the ``address``
  bucket of the client address (behind ``PROXY_COUNT`` proxies, the forwarded one).

A request over a limit is answered 429 (problem ``rate_limited``) with ``Retry-After``. A
request that writes is charged before its view, so a refused one never runs it. A request
that only reads (its route's read unit, :mod:`labapp.web.units`) is charged on a thread of
the limiter's beside its view, so the charge's round trip overlaps the read's: when it was
over the limit its answer is thrown away for the 429 (the read unit left nothing), and its
caller's next requests, for as long as ``Retry-After`` said, are charged before their view
like writes: a caller over its limit has at most one read per process and ``Retry-After``
run for nothing.

The answer carries ``RateLimit-Policy`` and ``RateLimit`` in the structured
form of draft-ietf-httpapi-ratelimit-headers-11, one list member per bucket counted::

    RateLimit-Policy: "token";q=1000;w=10, "user";q=2000;w=10
    RateLimit: "token";r=998;t=1, "user";r=1990;t=1

Pages (HTML) are not limited: a person cannot click at the rate of a script, and the login
form is throttled per failed attempt (:mod:`labapp.auth.throttle`).
"""
from __future__ import annotations

import hashlib
import ipaddress
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor

from flask import Flask, Response, current_app, g, request
from sqlalchemy.exc import SQLAlchemyError

from labapp.auth import ratelimits
from labapp.auth.ratelimits import NANOSECONDS, Budget, Charge, Outcome
from labapp.errors import TooManyRequests, problem_response
from labapp.web.loader import client_address, current_actor
from labapp.web.units import runs_in_read_unit

_OUTCOME = "rate_limit_outcome"
_PENDING = "rate_limit_pending"
_BEFORE_VIEW = "rate_limit_before_view"
# Threads a process charges reads on; more than the requests a worker serves at once is idle.
_CHARGING_THREADS = 4
# Callers refused lately whose reads are charged before their view; beyond this many the
# memory is emptied (their reads are then charged beside their view again, still refused).
_REFUSALS_KEPT = 10_000


def _is_api() -> bool:
    return request.path == "/api" or request.path.startswith("/api/")


def _address_key() -> str:
    """The bucket key of the client address: the address as written canonically, or, for
    something that is no address (a forged forwarded header: any length, any characters),
    a digest of it, which fits the key column and holds no character the database
    refuses."""
    address = client_address()
    try:
        return f"address:{ipaddress.ip_address(address)}"
    except ValueError:
        digest = hashlib.sha256(address.encode("utf-8", "surrogatepass")).hexdigest()
        return f"address:sha256:{digest}"


def _charges() -> list[Charge]:
    """The buckets the current request is counted in (see the module docstring)."""
    policies = ratelimits.policies()
    actor = current_actor()
    charges: list[tuple[str, str]] = []
    if actor.is_authenticated:
        pat_id = g.get("pat_id")
        if pat_id is not None:
            charges.append(("token", f"pat:{pat_id}"))
        elif actor.method == "bearer" and actor.session_id is not None:
            charges.append(("token", f"login:{actor.session_id}"))
        charges.append(("user", f"user:{actor.user_id}"))
    else:
        charges.append(("address", _address_key()))
    return [Charge(policies[name], key) for name, key in charges if name in policies]


class _Charging:
    """This process's threads that charge reads beside their view (made again in a forked
    worker, whose parent's threads did not come along), and the callers it refused lately."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = 0
        self._executor: ThreadPoolExecutor | None = None
        self._refused_until: dict[tuple[str, ...], int] = {}

    def submit(self, limiter: ratelimits.Limiter, charges: list[Charge]) -> Future[Outcome]:
        """Charge ``charges`` on a thread of this process."""
        with self._lock:
            if self._executor is None or self._pid != os.getpid():
                self._executor = ThreadPoolExecutor(_CHARGING_THREADS,
                                                    thread_name_prefix="labapp-ratelimit")
                self._pid = os.getpid()
            executor = self._executor
        return executor.submit(limiter.charge, charges)

    def remember(self, limiter: ratelimits.Limiter, charges: list[Charge],
                 outcome: Outcome) -> None:
        """Keep a refused caller's keys until its ``Retry-After`` has passed on the clock of
        ``limiter``."""
        if outcome.allowed:
            return
        now = limiter.clock()
        with self._lock:
            if len(self._refused_until) >= _REFUSALS_KEPT:
                self._refused_until = {keys: until for keys, until in self._refused_until.items()
                                       if until > now}
                if len(self._refused_until) >= _REFUSALS_KEPT:
                    self._refused_until.clear()
            self._refused_until[_keys(charges)] = now + outcome.retry_after * NANOSECONDS

    def refused_lately(self, limiter: ratelimits.Limiter, charges: list[Charge]) -> bool:
        """Whether the caller of ``charges`` was refused and its ``Retry-After`` runs."""
        return self._refused_until.get(_keys(charges), 0) > limiter.clock()


_charging = _Charging()


def _keys(charges: list[Charge]) -> tuple[str, ...]:
    return tuple(charge.key for charge in charges)


def _charge() -> Outcome:
    """Count the current request once, remembering the outcome for its answer; a charge
    begun beside the view (:func:`_limit_request`) is waited for."""
    if _OUTCOME in g:
        counted: Outcome = getattr(g, _OUTCOME)
        return counted
    setattr(g, _OUTCOME, Outcome())  # counted at most once, even if the charge fails
    limiter = ratelimits.limiter()
    pending: tuple[list[Charge], Future[Outcome]] | None = g.pop(_PENDING, None)
    if pending is None:
        charges = _charges()
        outcome = limiter.charge(charges)
    else:
        charges, future = pending
        outcome = future.result()
    _charging.remember(limiter, charges, outcome)
    setattr(g, _OUTCOME, outcome)
    return outcome


def _refused(outcome: Outcome) -> TooManyRequests:
    names = ", ".join(budget.policy.name for budget in outcome.budgets if not budget.allowed)
    return TooManyRequests(
        f"Rate limit reached ({names}); the RateLimit headers say what is left and "
        "Retry-After when to send again.", outcome.retry_after, code="rate_limited")


def _limit_request() -> None:
    """``before_request`` (after authentication): count the request, beside its view when
    it only reads and its caller was not refused lately; else now, and 429 when over a
    limit."""
    if not _is_api():
        return
    if runs_in_read_unit(current_app, request):
        charges = _charges()
        if not charges:
            setattr(g, _OUTCOME, Outcome())
            return
        limiter = ratelimits.limiter()
        if not _charging.refused_lately(limiter, charges):
            setattr(g, _PENDING, (charges, _charging.submit(limiter, charges)))
            return
    setattr(g, _BEFORE_VIEW, True)
    outcome = _charge()
    if not outcome.allowed:
        raise _refused(outcome)


def _publish(response: Response) -> Response:
    """``after_request``: add the headers to every ``/api`` answer. A request not charged
    before its view — a read charged beside it, or one refused before it was counted (bad
    credentials, a NUL in its path, a missing CSRF token), counted now by its address unless
    its caller was known — is answered 429 instead when that is over its limit."""
    if not _is_api():
        return response
    try:
        outcome = _charge()
    except SQLAlchemyError as error:  # a charge beside the view failed: as if before it
        return current_app.make_response(current_app.handle_user_exception(error))
    if not g.get(_BEFORE_VIEW, False) and not outcome.allowed:
        response = problem_response(_refused(outcome))
    if outcome.budgets:
        response.headers["RateLimit-Policy"] = ", ".join(
            f'"{budget.policy.name}";q={budget.policy.quota};w={budget.policy.window}'
            for budget in outcome.budgets)
        response.headers["RateLimit"] = ", ".join(
            f'"{budget.policy.name}";r={budget.remaining};t={budget.reset}'
            for budget in outcome.budgets)
    return response


def current_budgets() -> tuple[Budget, ...]:
    """What the current request left in each bucket it was counted in."""
    return _charge().budgets


def init_app(app: Flask) -> None:
    """Count and answer every ``/api`` request of ``app``; call after
    :func:`labapp.web.loader.init_auth` (the caller must be known first)."""
    ratelimits.init_app(app)
    app.before_request(_limit_request)
    app.after_request(_publish)
