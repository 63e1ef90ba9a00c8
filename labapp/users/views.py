"""The users and roles pages of the administration area (ADMIN only).

They call what the API calls: a user is created as ``POST /api/entity`` creates one
(:func:`labapp.entities.service.save_batch` with ``eClass: "User"``); edits, (de)activation
and password resets go through :func:`labapp.users.service.update_user` after the
``PUT /api/user`` schema; roles change through ``assign_role`` and ``revoke_role``. The
service's refusals appear on the page: field errors next to their input (400), the
last-administrator refusal where it happened (409). Forms work as plain posts; htmx swaps the
user table and the roles section in place.
"""
from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, current_app, flash, redirect, request, url_for
from marshmallow import ValidationError
from werkzeug.wrappers import Response as BaseResponse

from labapp.access.actor import ADMIN, Actor
from labapp.auth import pats, second_factor, sign_in_log
from labapp.db import db
from labapp.entities import loading
from labapp.entities import service as entities
from labapp.entities.forms import FORM_ERROR, field_errors
from labapp.errors import AppError, Conflict, InvalidInput, flatten_messages
from labapp.model import Entity
from labapp.model.registry import existing_class
from labapp.users import service
from labapp.users.schemas import UserUpdateSchema
from labapp.web.blocks import is_htmx, render_page
from labapp.web.loader import current_actor
from labapp.web.pages import members_only, require

bp = members_only(Blueprint("user_views", __name__, url_prefix="/admin/users"))

LIST_TEMPLATE = "users/list.html"
EDIT_TEMPLATE = "users/edit.html"
DEPARTMENT_LIMIT = 500  # the largest page loading.list_entities returns
# API field name → form field name, so the service's errors land on the right input.
CREATE_FIELDS = {"id": "username", "name": "name", "email": "email",
                 "departmentID": "department", "password": "password"}
EDIT_FIELDS = {"name": "name", "email": "email", "initials": "initials",
               "departmentID": "department", "isActive": "active", "password": "password"}


@bp.before_request
def _administrators_only() -> None:
    # Runs after members_only's check, which has sent anonymous visitors to the login page.
    require(current_actor(), (ADMIN,))


def _departments(actor: Actor) -> list[dict[str, Any]]:
    """The departments (the directory everyone reads), for the department selects."""
    return loading.list_entities(actor, existing_class("Department"), orderby="name",
                                 select_text="id,name", top=str(DEPARTMENT_LIMIT)).data


def _renamed(errors: dict[str, str], names: dict[str, str]) -> dict[str, str]:
    """``{API field: message}`` → ``{form field: message}``; others go on the whole form."""
    return {names.get(name, FORM_ERROR): message for name, message in errors.items()}


def _service_errors(error: AppError, names: dict[str, str]) -> dict[str, str]:
    """The complaints of a service error keyed by form field, else its detail on the form."""
    found = {item["field"]: item["message"] for item in error.errors or []}
    return _renamed(found, names) or {FORM_ERROR: error.detail}


def _missing(form: dict[str, Any], messages: dict[str, str]) -> dict[str, str]:
    """The message of every required form field left empty, keyed by field."""
    return {name: message for name, message in messages.items() if not form.get(name)}


def _validated(changes: dict[str, Any]) -> dict[str, str]:
    """The errors of ``changes`` by the ``PUT /api/user`` schema, keyed by form field."""
    try:
        UserUpdateSchema().load(changes)
    except ValidationError as error:
        found = {item["field"]: item["message"] for item in flatten_messages(error.messages)}
        return _renamed(found, EDIT_FIELDS)
    return {}


# ---- The list and the create form -------------------------------------------------------------

def _list_page(actor: Actor, *, block: str | None = None, status: int = 200,
               **extra: Any) -> Response:
    """The user list (or its ``users`` block) with the create form."""
    departments = _departments(actor)
    context: dict[str, Any] = {
        "users": service.list_users(),
        "departments": departments,
        "department_names": {row["id"]: row["name"] for row in departments},
        "form": {"department": actor.department_id}, "errors": {}, "users_notice": None,
        "users_error": None}
    context.update(extra)
    return render_page(LIST_TEMPLATE, block=block, status=status, **context)


@bp.get("")
def index() -> Response:
    """Every user with department, roles and state, and the form to create one."""
    return _list_page(current_actor())


@bp.post("")
def create() -> BaseResponse:
    """Create an active user as ``POST /api/entity`` does, then show the user's page."""
    actor = current_actor()
    form = {name: request.form.get(name, "").strip()
            for name in ("username", "name", "email", "department")}
    errors = _missing(form, {"username": "Enter a username.",
                             "department": "Choose a home department."})
    if errors:
        return _list_page(actor, status=400, form=form, errors=errors)
    item = {"eClass": "User", "id": form["username"], "departmentID": form["department"],
            "password": request.form.get("password", "")}
    # Empty optional fields are left out, as an API caller would (the name defaults to the id).
    item.update((name, form[name]) for name in ("name", "email") if form[name])
    try:
        # save_batch also updates: a username in use is refused, never overwritten.
        if db.session.get(Entity, form["username"]) is not None:
            raise Conflict(f"The username {form['username']!r} is taken.",
                           code="duplicate_id",
                           errors=[{"field": "id", "message": "This username is taken."}])
        entities.save_batch(actor, [item], notation=False)
    except Conflict as error:
        return _list_page(actor, status=409, form=form,
                          errors=_service_errors(error, CREATE_FIELDS))
    except InvalidInput as error:
        errors = _renamed(field_errors(error.errors), CREATE_FIELDS)
        return _list_page(actor, status=400, form=form,
                          errors=errors or {FORM_ERROR: error.detail})
    flash(f"User {form['username']} created.", "success")
    return redirect(url_for("user_views.edit", user_id=form["username"]), 303)


@bp.post("/<user_id>/active")
def set_active(user_id: str) -> BaseResponse:
    """Deactivate a user (every way of logging in stops working) or reactivate them."""
    actor = current_actor()
    active = request.form.get("active") == "true"
    try:
        service.update_user(actor, {"userID": user_id, "isActive": active})
    except Conflict as error:
        return _list_page(actor, block="users", status=409, users_error=error.detail)
    notice = f"User {user_id} was {'reactivated' if active else 'deactivated'}."
    if is_htmx():
        return _list_page(actor, block="users", users_notice=notice)
    flash(notice, "success")
    return redirect(url_for("user_views.index"), 303)


# ---- One user: profile, password, roles -------------------------------------------------------

def _edit_page(actor: Actor, user_id: str, *, block: str | None = None, status: int = 200,
               **extra: Any) -> Response:
    """The page of one user (or its ``roles`` block); 404 for an unknown user."""
    user = service.get_user(user_id)
    context: dict[str, Any] = {
        "user": user, "departments": _departments(actor),
        "assignable": [role for role in service.list_roles() if role.name not in user.roles],
        "form": {"name": user.name, "email": user.email or "", "initials": user.initials or "",
                 "department": user.department_id, "active": user.is_active},
        "errors": {}, "password_errors": {}, "roles_notice": None, "roles_error": None,
        "second_factor_since": second_factor.confirmed_at(user.id)}
    context.update(extra)
    return render_page(EDIT_TEMPLATE, block=block, status=status, **context)


def _back_to_user(user_id: str, notice: str) -> BaseResponse:
    """After a plain post: the user's page with ``notice`` flashed."""
    flash(notice, "success")
    return redirect(url_for("user_views.edit", user_id=user_id), 303)


@bp.get("/<user_id>")
def edit(user_id: str) -> Response:
    """A user's profile form, password reset and roles."""
    return _edit_page(current_actor(), user_id)


@bp.post("/<user_id>")
def update(user_id: str) -> BaseResponse:
    """Save name, email, initials, home department and whether the user is active."""
    actor = current_actor()
    form: dict[str, Any] = {name: request.form.get(name, "").strip()
                            for name in ("name", "email", "initials", "department")}
    form["active"] = request.form.get("active") == "true"
    changes = {"name": form["name"], "email": form["email"] or None,
               "initials": form["initials"] or None, "departmentID": form["department"],
               "isActive": form["active"]}
    errors = _missing(form, {"name": "Enter a name.", "department": "Choose a home department."})
    errors = errors or _validated(changes)
    if not errors:
        try:
            before = service.get_user(user_id).version
            after = service.update_user(actor, {"userID": user_id, **changes}).version
        except Conflict as error:
            return _edit_page(actor, user_id, status=409, form=form,
                              errors={FORM_ERROR: error.detail})
        except InvalidInput as error:
            errors = _service_errors(error, EDIT_FIELDS)
    if errors:
        return _edit_page(actor, user_id, status=400, form=form, errors=errors)
    return _back_to_user(user_id, f"User {user_id} saved." if after != before
                         else "Nothing was changed.")


@bp.post("/<user_id>/password")
def reset_password(user_id: str) -> BaseResponse:
    """Give the user a new password; every login they have ends and their personal access
    tokens are revoked (the notice says how many)."""
    actor = current_actor()
    password = request.form.get("password", "")
    errors = _missing({"password": password}, {"password": "Enter the new password."})
    errors = errors or _validated({"password": password})
    if not errors:
        try:
            tokens = pats.count_in_force(user_id)
            service.update_user(actor, {"userID": user_id, "password": password})
        except InvalidInput as error:
            errors = _service_errors(error, EDIT_FIELDS)
    if errors:
        return _edit_page(actor, user_id, status=400, password_errors=errors)
    if user_id == actor.user_id:
        return _back_to_user(user_id, "Your password was changed; your other logins have "
                                      "ended. Your personal access tokens still work.")
    revoked = {0: "they had no personal access tokens",
               1: "their personal access token was revoked"}.get(
        tokens, f"their {tokens} personal access tokens were revoked")
    return _back_to_user(user_id, f"The password of {user_id} was reset; all their logins "
                                  f"have ended and {revoked}.")


@bp.post("/<user_id>/second-factor/reset")
def reset_second_factor(user_id: str) -> BaseResponse:
    """Remove the user's second factor (a lost authenticator)."""
    removed = service.reset_second_factor(current_actor(), user_id)
    return _back_to_user(user_id, f"The second factor of {user_id} was reset." if removed
                         else f"{user_id} had no second factor.")


def _roles_changed(actor: Actor, user_id: str, notice: str) -> BaseResponse:
    """After a role change: the roles block again for htmx, else back to the user's page."""
    if is_htmx():
        return _edit_page(actor, user_id, block="roles", roles_notice=notice)
    return _back_to_user(user_id, notice)


@bp.post("/<user_id>/roles/assign")
def assign_role(user_id: str) -> BaseResponse:
    """Give the user a role."""
    actor = current_actor()
    role = request.form.get("role", "")
    if not role:  # the form preselects no role (issue 21 §5)
        return _edit_page(actor, user_id, block="roles", status=400,
                          roles_error="Choose a role.")
    try:
        service.assign_role(role, user_id, actor)
    except InvalidInput as error:
        return _edit_page(actor, user_id, block="roles", status=400, roles_error=error.detail)
    return _roles_changed(actor, user_id, f"{user_id} now holds the role {role}.")


@bp.post("/<user_id>/roles/revoke")
def revoke_role(user_id: str) -> BaseResponse:
    """Take a role from the user; never ADMIN from the last active administrator (409)."""
    actor = current_actor()
    role = request.form.get("role", "")
    try:
        service.revoke_role(role, user_id, actor)
    except (InvalidInput, Conflict) as error:
        return _edit_page(actor, user_id, block="roles", status=error.status,
                          roles_error=error.detail)
    return _roles_changed(actor, user_id, f"{user_id} no longer holds the role {role}.")


# ---- Sign-in events ---------------------------------------------------------------------------

sign_in_bp = members_only(Blueprint("sign_in_views", __name__, url_prefix="/admin/sign-ins"))
sign_in_bp.before_request(_administrators_only)
SIGN_IN_PAGE_SIZE = 50
_OUTCOMES = {"succeeded": True, "failed": False}
# Far beyond any log, and its OFFSET within every database's range.
MAX_SIGN_IN_PAGE = 1_000_000


@sign_in_bp.get("")
def sign_ins() -> Response:
    """Sign-in attempts, newest first, filtered by user and outcome, a page at a time."""
    user = request.args.get("user", "").strip()[:255] or None
    outcome = request.args.get("outcome", "")
    page = min(max(request.args.get("page", 1, type=int) or 1, 1), MAX_SIGN_IN_PAGE)
    found = sign_in_log.list_events(user=user, succeeded=_OUTCOMES.get(outcome),
                                    skip=(page - 1) * SIGN_IN_PAGE_SIZE, top=SIGN_IN_PAGE_SIZE)
    return render_page("users/sign_ins.html", events=found.events, total=found.total,
                       page=page, pages=max(1, -(-found.total // SIGN_IN_PAGE_SIZE)),
                       filters={"user": user or "", "outcome": outcome if outcome in _OUTCOMES
                                else ""},
                       retention_days=current_app.config["LABAPP"]["SIGN_IN_LOG_RETENTION_DAYS"])
