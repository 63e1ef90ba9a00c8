"""Login, logout and profile pages: the browser face of :mod:`labapp.auth`.

The pages call the same service functions as ``/api/auth`` and ``/api/user`` and load their
input through the same schemas. Every form works as a plain POST without JavaScript; htmx
only swaps the personal-access-token section in place.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from urllib.parse import urlsplit

from flask import Blueprint, Response, current_app, flash, redirect, request, session, url_for
from markupsafe import Markup
from marshmallow import Schema, ValidationError
from werkzeug.wrappers import Response as BaseResponse

from labapp.access.actor import Actor
from labapp.account import service
from labapp.account.schemas import LoginSchema, PasswordChangeSchema, PatCreateSchema
from labapp.auth import oidc, pats, second_factor, sessions
from labapp.auth.ldap import DirectoryUnavailable
from labapp.auth.second_factor import InvalidCode, PendingLogin
from labapp.auth.sessions import InvalidCredentials, TokenPair
from labapp.db import db, own_read, transaction
from labapp.errors import (
    Conflict,
    InvalidInput,
    NotAuthenticated,
    TooManyRequests,
    flatten_messages,
)
from labapp.model import Department, User
from labapp.model.types import utc_now
from labapp.storage.labels import qr_svg
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
# The browser session's key of a login waiting for its second step.
PENDING_KEY = "second_step"


def local_path(target: str | None) -> str | None:
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

def login_page(*, status: int = 200, next_path: str | None = None,
                form: Mapping[str, Any] | None = None, errors: Mapping[str, str] | None = None,
                error: str | None = None, end_session: Mapping[str, str] | None = None
                ) -> Response:
    password_form = (current_app.config["LABAPP"]["LOGIN_PASSWORD_FORM"]
                     or request.values.get("with") == "password" or bool(form))
    return render_page("account/login.html", status=status, next_path=next_path,
                       form=form or {}, errors=errors or {}, error=error,
                       providers=oidc.providers(), password_form=password_form,
                       end_session=end_session)


@bp.route("/login", methods=["GET", "POST"])
@opens_own_units
def login() -> BaseResponse:
    """The login form; a successful POST sets the login cookies and goes to ``next`` or home."""
    next_path = local_path(request.values.get("next"))
    if request.method in ("GET", "HEAD"):  # uptime monitors send HEAD
        if current_actor().is_authenticated:
            return redirect(next_path or url_for("web.home"))
        return login_page(next_path=next_path, end_session=session.pop(END_SESSION_KEY, None))
    username = request.form.get("username", "")
    password = request.form.get("password", "")
    keep_alive = bool(request.form.get("keep_alive"))
    form = {"username": username, "keep_alive": keep_alive}
    errors = _missing(request.form, {"username": "Enter your username.",
                                     "password": "Enter your password."})
    errors = errors or _load(LoginSchema(), {"username": username, "password": password,
                                             "keepAlive": keep_alive}, LOGIN_FIELDS)
    if errors:
        return login_page(status=400, next_path=next_path, form=form, errors=errors)
    try:
        result = service.password_step(username, password, keep_alive, client_address())
    except InvalidCredentials:
        return login_page(status=401, next_path=next_path, form=form,
                           error="Invalid username or password.")
    except TooManyRequests as exc:
        return _with_headers(login_page(status=429, next_path=next_path, form=form,
                                         error=exc.detail), exc.headers)
    except DirectoryUnavailable as exc:
        return login_page(status=503, next_path=next_path, form=form, error=exc.detail)
    if result.pair is None:
        # No login yet: the browser's signed session keeps the pending step for a while.
        session[PENDING_KEY] = result.pending
        step = ("account_views.login_code" if result.step is service.NextStep.CODE
                else "account_views.login_enrol")
        return redirect(url_for(step, next=next_path), 303)
    return _logged_in(result.pair, next_path)


def _logged_in(pair: TokenPair, next_path: str | None) -> BaseResponse:
    """Go on to ``next`` (or home) with the login's cookies and a fresh CSRF token."""
    session.pop(PENDING_KEY, None)
    rotate_csrf_token()
    response = redirect(next_path or url_for("web.home"), 303)
    set_login_cookies(response, pair)
    return response


# ---- The second step of a login ---------------------------------------------------------------

def _pending() -> PendingLogin | None:
    return second_factor.read_pending(session.get(PENDING_KEY))


def _start_again(next_path: str | None) -> BaseResponse:
    session.pop(PENDING_KEY, None)
    flash("The login was not completed in time or its password changed; log in again.",
          "error")
    return redirect(url_for("account_views.login", next=next_path), 303)


def _code_page(template: str, *, status: int = 200, **context: Any) -> Response:
    context.setdefault("error", None)
    return render_page(template, status=status, **context)


@bp.route("/login/code", methods=["GET", "POST"])
@opens_own_units
def login_code() -> BaseResponse:
    """The second step of a login with a second factor: the code of the authenticator app
    (or a recovery code). Only after it is right does the login open."""
    next_path = local_path(request.values.get("next"))
    pending = _pending()
    if pending is None:
        return _start_again(next_path)
    template = "account/login_code.html"
    if request.method in ("GET", "HEAD"):
        return _code_page(template, next_path=next_path)
    code = request.form.get("code", "").strip()
    if not code:
        return _code_page(template, status=400, next_path=next_path,
                          error="Enter the code from your authenticator app.")
    try:
        pair = service.code_step(pending, code, client_address())
    except InvalidCode as exc:
        return _code_page(template, status=401, next_path=next_path, error=exc.detail)
    except TooManyRequests as exc:
        return _with_headers(_code_page(template, status=429, next_path=next_path,
                                        error=exc.detail), exc.headers)
    except InvalidCredentials:
        return _start_again(next_path)
    return _logged_in(pair, next_path)


@bp.route("/login/enrol", methods=["GET", "POST"])
@opens_own_units
def login_enrol() -> BaseResponse:
    """The second step of a login whose account must have a second factor and has none:
    set one up; the login opens once its first code is right, with the recovery codes."""
    next_path = local_path(request.values.get("next"))
    pending = _pending()
    if pending is None:
        return _start_again(next_path)
    try:
        secret = service.enrolment_secret(pending)
    except InvalidCredentials:
        return _start_again(next_path)
    template = "account/login_enrol.html"
    setup = _setup(pending.user_id, secret)
    if request.method in ("GET", "HEAD"):
        return _code_page(template, next_path=next_path, setup=setup)
    code = request.form.get("code", "").strip()
    if not code:
        return _code_page(template, status=400, next_path=next_path, setup=setup,
                          error="Enter the code your authenticator app shows.")
    try:
        enrolled = service.enrol_step(pending, code, client_address())
    except InvalidCode as exc:
        return _code_page(template, status=401, next_path=next_path, setup=setup,
                          error=exc.detail)
    except TooManyRequests as exc:
        return _with_headers(_code_page(template, status=429, next_path=next_path,
                                        setup=setup, error=exc.detail), exc.headers)
    except InvalidCredentials:
        return _start_again(next_path)
    session.pop(PENDING_KEY, None)
    rotate_csrf_token()
    response = _code_page(template, next_path=next_path or url_for("web.home"), setup=None,
                          recovery_codes=enrolled.recovery_codes)
    set_login_cookies(response, enrolled.pair)
    return response


@bp.post("/logout")
@opens_own_units
def logout() -> BaseResponse:
    """End the login of this browser's cookie (it stops working everywhere) and go to login.

    Its own units: the login ends in a short write unit; the provider's logout is looked up
    after it, holding no unit, since its discovery document may have to be fetched over the
    network first (by a process that has not signed anyone in with it yet)."""
    actor = current_actor()
    if actor.session_id is not None:
        with transaction():
            sessions.revoke_session(actor.session_id)
    _offer_end_session(actor)
    response = redirect(url_for("account_views.login"), 303)
    clear_login_cookies(response)
    rotate_csrf_token()
    flash("You have been logged out.", "success")
    return response


# ---- OpenID Connect ---------------------------------------------------------------------------

# The provider logout the login page offers after an OpenID Connect user's logout (the
# sign-in routes themselves: labapp/account/oidc_views.py).
END_SESSION_KEY = "oidc_end_session"


def _offer_end_session(actor: Actor) -> None:
    """After the local logout of a user who signs in with a provider, offer (on the login
    page) the provider's own logout, when its discovery document names one."""
    if actor.user_id is None:
        return
    with own_read() as read:
        user = read.get(User, actor.user_id)
        auth_source = user.auth_source if user is not None else ""
    if not auth_source.startswith("oidc:"):
        return
    provider = oidc.provider(auth_source.removeprefix("oidc:"))
    if provider is None:
        return
    url = oidc.end_session_url(provider.name,
                               url_for("account_views.login", _external=True))
    if url:
        session[END_SESSION_KEY] = {"url": url, "name": provider.display_name}


def _provider_display_name(auth_source: str) -> str | None:
    """The display name of the provider of ``auth_source`` (``oidc:<name>``), or None."""
    found = oidc.provider(auth_source.removeprefix("oidc:"))
    return found.display_name if found and auth_source.startswith("oidc:") else None


# ---- Profile ----------------------------------------------------------------------------------

def _profile(actor: Actor, *, block: str | None = None, status: int = 200,
             **extra: Any) -> Response:
    """The profile page (or its token block for htmx) with the actor's current data."""
    user = db.session.get(User, actor.user_id)
    if user is None:  # signed out or removed since the request began
        raise NotAuthenticated()
    department = db.session.get(Department, user.department_id) if user.department_id else None
    now = utc_now()
    pending = second_factor.pending_secret(user.id)
    context: dict[str, Any] = {
        "user": user, "department": department, "tokens": pats.list_for(actor), "now": now,
        "today": now.date().isoformat(), "password_errors": {}, "password_error": None,
        "pat_form": {}, "pat_errors": {}, "pat_notice": None, "created": None,
        "second_factor": {
            "local": user.auth_source == "local" and user.password_hash is not None,
            "confirmed_utc": second_factor.confirmed_at(user.id),
            "codes_left": second_factor.recovery_codes_left(user.id),
            "setup": _setup(user.id, pending) if pending else None},
        "second_factor_error": None, "recovery_codes": None,
        "sign_in_provider": _provider_display_name(user.auth_source)}
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


# ---- Second factor ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Setup:
    """What an authenticator app needs to set up a second factor: the QR code of its
    ``otpauth://`` URI (inline SVG, allowed by the pages' policy) and the secret to type."""

    qr_svg: Markup
    secret: str
    uri: str


def _setup(user_id: str, secret: str) -> Setup:
    uri = second_factor.provisioning_uri(user_id, secret)
    grouped = " ".join(secret[i:i + 4] for i in range(0, len(secret), 4))
    return Setup(qr_svg(uri), grouped, uri)


def _back_to_profile(notice: str) -> BaseResponse:
    flash(notice, "success")
    return redirect(url_for("account_views.profile", _anchor="second-factor"), 303)


@bp.post("/profile/second-factor")
@login_required("account_views.profile")
def begin_second_factor() -> BaseResponse:
    """Start setting up a second factor: a new secret, shown until its first code confirms it."""
    actor = current_actor()
    try:
        service.begin_own_enrolment(actor)
    except Conflict as exc:
        return _profile(actor, status=409, second_factor_error=exc.detail)
    return redirect(url_for("account_views.profile", _anchor="second-factor"), 303)


@bp.post("/profile/second-factor/confirm")
@login_required("account_views.profile")
@opens_own_units
def confirm_second_factor() -> BaseResponse:
    """Confirm the second factor being set up with a code; the recovery codes are shown once."""
    actor = current_actor()
    code = request.form.get("code", "").strip()
    if not code:
        return _profile(actor, status=400,
                        second_factor_error="Enter the code your authenticator app shows.")
    try:
        codes = service.confirm_own_enrolment(actor, code, client_address())
    except InvalidCode as exc:
        return _profile(actor, status=400, second_factor_error=exc.detail)
    except TooManyRequests as exc:
        return _with_headers(_profile(actor, status=429, second_factor_error=exc.detail),
                             exc.headers)
    except Conflict as exc:
        return _profile(actor, status=409, second_factor_error=exc.detail)
    return _profile(actor, recovery_codes=codes)


@bp.post("/profile/second-factor/disable")
@login_required("account_views.profile")
@opens_own_units
def disable_second_factor() -> BaseResponse:
    """Remove the second factor, proved by a current code or a recovery code."""
    actor = current_actor()
    code = request.form.get("code", "").strip()
    if not code:
        return _profile(actor, status=400, second_factor_error="Enter a current code or a "
                                                               "recovery code.")
    try:
        service.disable_own(actor, code, client_address())
    except InvalidCode as exc:
        return _profile(actor, status=400, second_factor_error=exc.detail)
    except TooManyRequests as exc:
        return _with_headers(_profile(actor, status=429, second_factor_error=exc.detail),
                             exc.headers)
    return _back_to_profile("Your second factor has been removed; you sign in with your "
                            "password alone.")
