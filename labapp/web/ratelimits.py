"""The API's published rate limits (decisions §18, docs/decisions/rate-limits.md): every
``/api`` request is counted once its caller is known, before its view and outside its unit
of work, and every ``/api`` answer says what is left.

Who is counted where:

- a personal access token, or one login's Bearer tokens: the ``token`` bucket of that token
  or login, and the ``user`` bucket of its owner;
- a browser session cookie or a Basic password: the ``user`` bucket only;
- no credentials, or credentials refused (401 before the limiter ran): the ``address``
  bucket of the client address (behind ``PROXY_COUNT`` proxies, the forwarded one).

A request over a limit is answered 429 (problem ``rate_limited``) with ``Retry-After``, its
view never run. The answer carries ``RateLimit-Policy`` and ``RateLimit`` in the structured
form of draft-ietf-httpapi-ratelimit-headers-11, one list member per bucket counted::

    RateLimit-Policy: "token";q=1000;w=10, "user";q=2000;w=10
    RateLimit: "token";r=998;t=1, "user";r=1990;t=1

Pages (HTML) are not limited: a person cannot click at the rate of a script, and the login
form is throttled per failed attempt (:mod:`labapp.auth.throttle`).
"""
from __future__ import annotations

import hashlib
import ipaddress

from flask import Flask, Response, g, request

from labapp.auth import ratelimits
from labapp.auth.ratelimits import Budget, Charge, Outcome
from labapp.errors import TooManyRequests, problem_response
from labapp.web.loader import client_address, current_actor

_OUTCOME = "rate_limit_outcome"


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


def _charge() -> Outcome:
    """Count the current request once, remembering the outcome for its answer."""
    if _OUTCOME in g:
        counted: Outcome = getattr(g, _OUTCOME)
        return counted
    setattr(g, _OUTCOME, Outcome())  # counted at most once, even if the charge fails
    outcome = ratelimits.limiter().charge(_charges())
    setattr(g, _OUTCOME, outcome)
    return outcome


def _refused(outcome: Outcome) -> TooManyRequests:
    names = ", ".join(budget.policy.name for budget in outcome.budgets if not budget.allowed)
    return TooManyRequests(
        f"Rate limit reached ({names}); the RateLimit headers say what is left and "
        "Retry-After when to send again.", outcome.retry_after, code="rate_limited")


def _limit_request() -> None:
    """``before_request`` (after authentication): count the request; 429 when over a
    limit."""
    if not _is_api():
        return
    outcome = _charge()
    if not outcome.allowed:
        raise _refused(outcome)


def _publish(response: Response) -> Response:
    """``after_request``: add the headers to every ``/api`` answer. A request refused
    before it was counted (bad credentials, a NUL in its path, a missing CSRF token) is
    counted now — by its address unless its caller was known — and answered 429 instead
    when that is over its limit."""
    if not _is_api():
        return response
    counted = _OUTCOME in g
    outcome = _charge()
    if not counted and not outcome.allowed:
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
