"""Login, logout and profile pages: the browser face of :mod:`labapp.auth`.

The pages call the same service functions as ``/api/auth`` and ``/api/user`` and load their
input through the same schemas. Every form works as a plain POST without JavaScript; htmx
only swaps the personal-access-token section in place.
"""
from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from urllib.parse import urlsplit

from flask import Blueprint, Response, flash, redirect, request, url_for
from marshmallow import Schema, ValidationError
from werkzeug.wrappers import Response as BaseResponse

from labapp.access.actor import Actor
from labapp.account import service
from labapp.account.schemas import LoginSchema, PasswordChangeSchema, PatCreateSchema
from labapp.auth import pats, sessions
from labapp.auth.ldap import DirectoryUnavailable
from labapp.auth.sessions import InvalidCredentials
from labapp.db import db
from labapp.errors import InvalidInput, NotAuthenticated, TooManyRequests, flatten_messages
from labapp.model import Department, User
from labapp.model.types import utc_now
from labapp.web.blocks import is_htmx, render_page
from labapp.web.loader import (
    clear_login_cookies,
    client_address,
    current_actor,
    rotate_csrf_token,
    set_login_cookies,
)
from labapp.web.pages import login_required, no_store
from labapp.web.units import opens_own_units

bp = Blueprint("account_views", __name__)
# These pages carry CSRF tokens, personal data or a token shown once: never cache them.
bp.after_request(no_store)

PROFILE_TEMPLATE = "account/profile.html"
PAT_BLOCK = "pats"
# API field name → form field name, so service and schema errors land on the right input.
LOGIN_FIELDS = {"username": "username", "password": "password"}
PASSWORD_FIELDS = {"password": "new_password", "repeatPassword": "repeat_password",
                   "confirmPassword": "current_password"}
PAT_FIELDS = {"name": "name", "expiresUtc": "expires"}


def _local_path(target: str | None) -> str | None:
    """``target`` when it is a path on this site, else None, so ``next`` cannot redirect away.

    Browsers read ``//host`` and ``/\\host`` as other sites and drop tabs and newlines first,
    hence no backslashes and no control characters at all.
    """
    if not target or not target.startswith("/") or target.startswith("//"):
        return None
    if "\\" in target or any(ord(char) < 0x20 or ord(char) == 0x7F for char in target):
        return None
    parts = urlsplit(target)
    return target if not parts.scheme and not parts.netloc else None


def _with_headers(response: Response, headers: Mapping[str, str]) -> Response:
    response.headers.update(headers)
    return response


def _missing(form: Mapping[str, str], messages: Mapping[str, str]) -> dict[str, str]:
    """The message of every required form field left empty, keyed by field."""
    return {name: message for name, message in messages.items() if not form.get(name, "").strip()}


def _field_errors(errors: list[dict[str, str]] | None, names: Mapping[str, str]) -> dict[str, str]:
    """``[{field, message}]`` of an API error → ``{form field: message}``."""
    return {names.get(error["field"], error["field"]): error["message"] for error in errors or []}


def _load(schema: Schema, data: dict[str, Any], names: Mapping[str, str]) -> dict[str, str]:
    """Validate form values with the API's schema; the errors keyed by form field."""
    try:
        schema.load(data)
    except ValidationError as error:
        return _field_errors(flatten_messages(error.messages), names)
    return {}


# ---- Login and logout -------------------------------------------------------------------------

def _login_page(*, status: int = 200, next_path: str | None = None,
                form: Mapping[str, Any] | None = None, errors: Mapping[str, str] | None = None,
                error: str | None = None) -> Response:
    return render_page("account/login.html", status=status, next_path=next_path,
                       form=form or {}, errors=errors or {}, error=error)


@bp.route("/login", methods=["GET", "POST"])
@opens_own_units
def login() -> BaseResponse:
    """The login form; a successful POST sets the login cookies and goes to ``next`` or home."""
    next_path = _local_path(request.values.get("next"))
    if request.method in ("GET", "HEAD"):  # uptime monitors send HEAD
        if current_actor().is_authenticated:
            return redirect(next_path or url_for("web.home"))
        return _login_page(next_path=next_path)
    username = request.form.get("username", "")
    password = request.form.get("password", "")
    keep_alive = bool(request.form.get("keep_alive"))
    form = {"username": username, "keep_alive": keep_alive}
    errors = _missing(request.form, {"username": "Enter your username.",
                                     "password": "Enter your password."})
    errors = errors or _load(LoginSchema(), {"username": username, "password": password,
                                             "keepAlive": keep_alive}, LOGIN_FIELDS)
    if errors:
        return _login_page(status=400, next_path=next_path, form=form, errors=errors)
    try:
        pair = service.login_with_password(username, password, keep_alive, client_address())
    except InvalidCredentials:
        return _login_page(status=401, next_path=next_path, form=form,
                           error="Invalid username or password.")
    except TooManyRequests as exc:
        return _with_headers(_login_page(status=429, next_path=next_path, form=form,
                                         error=exc.detail), exc.headers)
    except DirectoryUnavailable as exc:
        return _login_page(status=503, next_path=next_path, form=form, error=exc.detail)
    rotate_csrf_token()
    response = redirect(next_path or url_for("web.home"), 303)
    set_login_cookies(response, pair)
    return response


@bp.post("/logout")
def logout() -> BaseResponse:
    """End the login of this browser's cookie (it stops working everywhere) and go to login."""
    actor = current_actor()
    if actor.session_id is not None:
        sessions.revoke_session(actor.session_id)
    response = redirect(url_for("account_views.login"), 303)
    clear_login_cookies(response)
    rotate_csrf_token()
    flash("You have been logged out.", "success")
    return response


# ---- Profile ----------------------------------------------------------------------------------

def _profile(actor: Actor, *, block: str | None = None, status: int = 200,
             **extra: Any) -> Response:
    """The profile page (or its token block for htmx) with the actor's current data."""
    user = db.session.get(User, actor.user_id)
    if user is None:  # signed out or removed since the request began
        raise NotAuthenticated()
    department = db.session.get(Department, user.department_id) if user.department_id else None
    now = utc_now()
    context: dict[str, Any] = {
        "user": user, "department": department, "tokens": pats.list_for(actor), "now": now,
        "today": now.date().isoformat(), "password_errors": {}, "password_error": None,
        "pat_form": {}, "pat_errors": {}, "pat_notice": None, "created": None}
    context.update(extra)
    return render_page(PROFILE_TEMPLATE, block=block, status=status, **context)


@bp.get("/profile")
@login_required("account_views.profile")
def profile() -> Response:
    """The signed-in user's account, password form and personal access tokens."""
    return _profile(current_actor())


@bp.post("/profile/password")
@login_required("account_views.profile")
@opens_own_units
def change_password() -> BaseResponse:
    """Change the password; the actor's other logins end, this one stays."""
    actor = current_actor()
    form = request.form
    current = form.get("current_password", "")
    password = form.get("new_password", "")
    repeat = form.get("repeat_password", "")
    errors = _missing(form, {"current_password": "Enter your current password.",
                             "new_password": "Enter a new password.",
                             "repeat_password": "Repeat the new password."})
    errors = errors or _load(PasswordChangeSchema(), {
        "password": password, "repeatPassword": repeat, "confirmPassword": current},
        PASSWORD_FIELDS)
    if errors:
        return _profile(actor, status=400, password_errors=errors,
                        password_error="The password was not changed; correct the fields below.")
    try:
        service.change_own_password(actor, password, repeat, current, client_address())
    except TooManyRequests as exc:
        return _with_headers(_profile(actor, status=429, password_error=exc.detail), exc.headers)
    except InvalidInput as exc:
        return _profile(actor, status=400, password_error=exc.detail,
                        password_errors=_field_errors(exc.errors, PASSWORD_FIELDS))
    flash("Your password has been changed. Your other logins have been ended.", "success")
    return redirect(url_for("account_views.profile"), 303)


def _expiry(raw: str) -> datetime | None:
    """The end (UTC) of the day ``YYYY-MM-DD``; None for an empty field; ValueError if bad."""
    if not raw:
        return None
    try:
        return datetime.combine(date.fromisoformat(raw) + timedelta(days=1), time.min, UTC)
    except OverflowError:
        raise ValueError(raw) from None


@bp.post("/profile/pat")
@login_required("account_views.profile")
def create_pat() -> Response:
    """Create a personal access token: 201 with its value shown this once, 400 inline errors."""
    actor = current_actor()
    name = request.form.get("name", "").strip()
    raw_expiry = request.form.get("expires", "").strip()
    form = {"name": name, "expires": raw_expiry}
    errors = _missing(form, {"name": "Enter a name for the token."})
    errors = errors or _load(PatCreateSchema(only=("name",)), {"name": name}, PAT_FIELDS)
    try:
        expires_utc = _expiry(raw_expiry)
    except ValueError:
        errors["expires"] = "Enter a date as YYYY-MM-DD."
    if not errors:
        try:
            created = pats.create(actor, name, expires_utc)
        except InvalidInput as exc:
            errors = _field_errors(exc.errors, PAT_FIELDS)
    if errors:
        return _profile(actor, block=PAT_BLOCK, status=400, pat_form=form, pat_errors=errors)
    return _profile(actor, block=PAT_BLOCK, status=201, created=created)


@bp.post("/profile/pat/<pat_id>/revoke")
@login_required("account_views.profile")
def revoke_pat(pat_id: str) -> BaseResponse:
    """Revoke one of the actor's tokens; another user's (or an unknown) token is 404."""
    actor = current_actor()
    pats.revoke(actor, pat_id)
    notice = "The token has been revoked; it no longer works."
    if is_htmx():
        return _profile(actor, block=PAT_BLOCK, pat_notice=notice)
    flash(notice, "success")
    return redirect(url_for("account_views.profile"), 303)
