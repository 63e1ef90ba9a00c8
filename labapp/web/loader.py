"""The request → Actor loader, the login cookies and CSRF protection.

Every request is authenticated once, before its view runs, by exactly one method:
``Authorization: Bearer`` (access token), ``Authorization: Basic`` (``username:PAT…`` or
``username:password``), or the browser session cookie. Bad credentials in a header are a
401 on every path; a stale cookie simply means anonymous. State-changing requests that rely on
the cookie must carry the CSRF token (header ``X-CSRF-Token`` or form field ``csrf_token``).

Credentials are checked by reading only: a password's Argon2 verification never runs inside a
write transaction (on SQLite that would hold the database's one write lock for its whole
duration). What authentication writes (a failed attempt, a PAT's last use, a rehashed
password) goes in short transactions of its own.
"""
from __future__ import annotations

import base64
import binascii
import secrets
from functools import wraps
from typing import Any, Callable

from flask import Flask, current_app, g, has_request_context, request, session
from flask_login import LoginManager, current_user
from sqlalchemy import Row
from werkzeug.wrappers import Response as BaseResponse

from labapp.access.actor import ANONYMOUS, Actor
from labapp.auth import actors, basic_cache, pats, second_factor, sessions, sign_in_log, throttle
from labapp.auth.second_factor import SecondFactorRequired
from labapp.auth.secrets import PAT_PREFIX, same
from labapp.auth.sessions import TokenPair
from labapp.db import transaction
from labapp.errors import Forbidden, NotAuthenticated, wants_problem_json

View = Callable[..., Any]

SESSION_COOKIE = "labapp_session"
REFRESH_COOKIE = "labapp_refresh"
REFRESH_COOKIE_PATH = "/api/auth"
CSRF_HEADER = "X-CSRF-Token"
CSRF_FIELD = "csrf_token"
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def current_actor() -> Actor:
    """The actor of the current request (anonymous outside a request or when not logged in)."""
    actor = current_user._get_current_object() if has_request_context() else ANONYMOUS
    return actor if isinstance(actor, Actor) else ANONYMOUS


def client_address() -> str:
    return request.remote_addr or "unknown"


def _refusing_second_factor(user: Row[Any], username: str, address: str) -> Actor:
    """The actor of a right Basic password, unless the account has (or must have) a second
    factor: then 401 ``second_factor_required`` (decisions §19), recorded in the sign-in log."""
    actor = actors.actor_of(user, "basic")
    if user.has_second_factor or second_factor.must_enrol(actor.roles, user.auth_source):
        with transaction():
            sign_in_log.record(username, user.id, sign_in_log.BASIC, None, address, False,
                               SecondFactorRequired.code)
        raise SecondFactorRequired(
            "This account signs in with a second factor, so Basic authentication with its "
            "password is refused: use a personal access token (Basic username:PAT…) or a "
            "Bearer token from POST /api/auth/login instead.")
    return actor


def _from_basic_password(username: str, password: str) -> Actor:
    """Basic ``username:password``; a success is remembered briefly (:mod:`basic_cache`).

    Throttling is checked first, so a throttled client learns nothing from the memory.
    """
    address = client_address()
    pair_failures = throttle.check(username, address)
    memory = basic_cache.memory()
    user = actors.user_with_password(username)
    if (user is not None and user.is_active and user.password_hash
            and memory.recalls(username, password, user.password_hash)):
        return _refusing_second_factor(user, username, address)
    verified = sessions.check_password_recording_failure(username, password, address,
                                                         sign_in_log.BASIC)
    if verified.fresh_hash is not None or pair_failures:
        with transaction():
            sessions.store_fresh_hash(verified)
            throttle.clear(username, address)
    memory.remember(username, password, verified.fresh_hash or verified.password_hash)
    verified_user = actors.user_with_password(verified.user_id)
    if verified_user is None:  # removed since its password was checked
        raise NotAuthenticated()
    return _refusing_second_factor(verified_user, username, address)


def _from_basic(username: str, secret: str) -> Actor:
    """A valid PAT is never throttled; anything else is checked as a password (so a wrong PAT
    counts as a failed login)."""
    if secret.startswith(PAT_PREFIX):
        use = actors.actor_for_pat(username, secret)
        if use is not None:
            g.pat_id = use.token_id  # its own rate-limit bucket (labapp.web.ratelimits)
            if use.stale_use:
                with transaction():
                    pats.record_use(use.token_id)
            return use.actor
    return _from_basic_password(username, secret)


def _basic_credentials() -> tuple[str, str] | None:
    """``(username, secret)`` of the Basic header, or None unless it is ``username:secret``.

    Werkzeug's parser turns a missing colon into an empty password; that is malformed here.
    """
    _, _, encoded = request.headers["Authorization"].partition(" ")
    try:
        decoded = base64.b64decode(encoded.strip()).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None
    username, colon, secret = decoded.partition(":")
    # No username holds NUL, and PostgreSQL rejects it in any query parameter.
    return (username, secret) if username and colon and "\x00" not in username else None


def _from_header() -> Actor:
    auth = request.authorization
    if auth is None or auth.type not in {"basic", "bearer"}:
        raise NotAuthenticated("The Authorization header is malformed or uses an unsupported "
                               "scheme; use Bearer or Basic.", code="invalid_authorization")
    if auth.type == "bearer":
        user_id, session_id = sessions.access_token_login(auth.token or "")
        actor = actors.actor_for_login(user_id, session_id, "bearer")
        if actor is None:
            raise sessions.InvalidToken("The access token has been revoked.")
        return actor
    credentials = _basic_credentials()
    if credentials is None:
        raise NotAuthenticated("The Basic credentials are malformed; send "
                               "base64(username:password).", code="invalid_authorization")
    return _from_basic(*credentials)


def _from_cookie() -> Actor:
    cookie = request.cookies.get(SESSION_COOKIE)
    login = sessions.session_cookie_login(cookie) if cookie else None
    actor = actors.actor_for_login(*login, "cookie") if login is not None else None
    return actor if actor is not None else ANONYMOUS


def _authenticate() -> None:
    if request.endpoint == "static":
        g.actor = ANONYMOUS
        return
    g.actor = _from_header() if "Authorization" in request.headers else _from_cookie()
    _check_csrf(g.actor)


def csrf_token() -> str:
    """The CSRF token of this browser, created on first use and kept in its signed session."""
    token = session.get("csrf")
    if not token:
        token = session["csrf"] = secrets.token_urlsafe(32)
    return token


def rotate_csrf_token() -> None:
    """Give the browser a new CSRF token (at login and logout)."""
    session["csrf"] = secrets.token_urlsafe(32)


def verify_csrf() -> None:
    """Raise 403 unless the request carries this browser's CSRF token."""
    sent = request.headers.get(CSRF_HEADER)
    if sent is None and request.mimetype in {"application/x-www-form-urlencoded",
                                             "multipart/form-data"}:
        sent = request.form.get(CSRF_FIELD)
    expected = session.get("csrf")
    if not sent or not expected or not same(sent, expected):
        raise Forbidden("The CSRF token is missing or invalid; reload the page and try again.",
                        code="csrf_failed")


def csrf_exempt(view: View) -> View:
    """Mark a view whose credentials travel in its body (login, refresh, logout).

    A body secret cannot be forged cross-site, so a browser cookie that happens to come along
    must not demand the CSRF token; the view calls :func:`verify_csrf` when it does rely on a
    cookie.
    """
    # A mark read back with getattr; a function's type declares no such attribute.
    setattr(view, "csrf_exempt", True)  # noqa: B010
    return view


def _check_csrf(actor: Actor) -> None:
    if request.method in _SAFE_METHODS:
        return
    if getattr(current_app.view_functions.get(request.endpoint or ""), "csrf_exempt", False):
        return
    # API callers authenticating with a header cannot be forged cross-site; cookies can.
    if wants_problem_json() and actor.method != "cookie":
        return
    verify_csrf()


def set_login_cookies(response: BaseResponse, pair: TokenPair) -> None:
    """Attach the session and refresh cookies of a login (HttpOnly, SameSite=Lax)."""
    secure = current_app.config["LABAPP"]["SECURE_COOKIES"]
    max_age = int(sessions.KEEP_ALIVE_LIFETIME.total_seconds()) if pair.keep_alive else None
    cookie = sessions.session_cookie_value(pair.session_id, pair.user_id)
    response.set_cookie(SESSION_COOKIE, cookie, max_age=max_age, httponly=True, samesite="Lax",
                        secure=secure)
    response.set_cookie(REFRESH_COOKIE, pair.refresh_token, max_age=max_age,
                        path=REFRESH_COOKIE_PATH, httponly=True, samesite="Lax", secure=secure)


def clear_login_cookies(response: BaseResponse) -> None:
    response.delete_cookie(SESSION_COOKIE, httponly=True, samesite="Lax")
    response.delete_cookie(REFRESH_COOKIE, path=REFRESH_COOKIE_PATH, httponly=True,
                           samesite="Lax")


def require_scope(*scopes: str) -> Callable[[View], View]:
    """Guard a view: 401 for anonymous callers; with ``scopes``, 403 unless one is held.

    The scopes are recorded on the view for the OpenAPI document.
    """
    def decorate(view: View) -> View:
        @wraps(view)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            actor = current_actor()
            if not actor.is_authenticated:
                raise NotAuthenticated()
            if scopes and not actor.holds_any(scopes):
                raise Forbidden(f"This requires the scope {' or '.join(scopes)}.",
                                code="missing_scope")
            return view(*args, **kwargs)

        # Read back by the OpenAPI document; a function's type declares no such attribute.
        setattr(guarded, "required_scopes", tuple(scopes))  # noqa: B010
        return guarded
    return decorate


def _loaded_actor(_request: Any) -> Actor | None:
    actor = g.get("actor")
    return actor if actor is not None and actor.is_authenticated else None


def init_auth(app: Flask) -> None:
    """Install the loader, Flask-Login's ``current_user`` and the template helpers."""
    manager = LoginManager()
    manager.session_protection = None
    manager.anonymous_user = Actor
    manager.request_loader(_loaded_actor)
    manager.init_app(app)
    app.before_request(_authenticate)
    app.jinja_env.globals["csrf_token"] = csrf_token
    app.context_processor(lambda: {"current_actor": current_actor()})
