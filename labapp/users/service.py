"""Users: creating them (CLI and ``init``), profiles, activation and roles."""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from sqlalchemy import Select, select

from labapp.access.actor import ADMIN, BUILT_IN_ROLES, Actor
from labapp.auth import pats, second_factor, sessions
from labapp.auth.ldap import NO_LOCAL_PASSWORD
from labapp.auth.passwords import set_password
from labapp.changes import assign, diff
from labapp.db import db
from labapp.entities.audit import record_created, record_updated, stamp_created
from labapp.errors import Conflict, Forbidden, InvalidInput, NotFound
from labapp.model import Department, Entity, Role, User, UserRole
from labapp.model.types import utc_now

USERNAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")


def create_user(*, username: str, name: str, department_id: str, password: str | None,
                roles: Iterable[str] = (), created_by: str, email: str | None = None,
                initials: str | None = None, auth_source: str = "local",
                external_id: str | None = None) -> User:
    """Create an active user; 400 for a bad username, department, role or password, 409 when
    the id is taken.

    ``password`` None leaves the user without a local password: one who signs in elsewhere
    (``auth_source`` and the directory's ``external_id`` for them), until an admin gives one.
    A directory (``ldap``) user's hash is :data:`NO_LOCAL_PASSWORD`, which no password
    matches, so the Basic memory keys on it as on a local hash.
    """
    if not USERNAME_PATTERN.match(username):
        raise InvalidInput("A username is 1 to 64 letters, digits or . _ @ -, starting with a "
                           "letter or digit.", errors=[{"field": "id", "message": "invalid"}])
    if db.session.get(Entity, username) is not None:
        raise Conflict(f"The id {username!r} is already taken.", code="duplicate_id")
    if db.session.get(Department, department_id) is None:
        raise InvalidInput(f"Unknown department {department_id!r}.",
                           errors=[{"field": "departmentID", "message": "unknown department"}])
    roles = sorted(set(roles))
    known = set(db.session.scalars(select(Role.name).where(Role.name.in_(roles))))
    unknown = [role for role in roles if role not in known]
    if unknown:
        raise InvalidInput(f"Unknown role(s): {', '.join(unknown)}.",
                           errors=[{"field": "roles", "message": f"unknown: {role}"}
                                   for role in unknown])
    user = User(id=username, name=name or username, status="Active", type="Other",
                user_id=username, department_id=department_id, attributes={}, email=email,
                initials=initials, is_active=True, settings={}, auth_source=auth_source,
                external_id=external_id, role_links=[UserRole(role_name=role) for role in roles])
    if password is not None:
        set_password(user, password)
    elif auth_source == "ldap":
        user.password_hash = NO_LOCAL_PASSWORD
    stamp_created(user, created_by)
    db.session.add(user)
    db.session.flush()
    record_created(user, created_by)
    return user


SELF_EDITABLE = ("name", "email", "initials", "settings")
ADMIN_EDITABLE = SELF_EDITABLE + ("departmentID", "isActive", "password")
_ATTRIBUTES = {"name": "name", "email": "email", "initials": "initials", "settings": "settings",
               "departmentID": "department_id", "isActive": "is_active"}


def get_user(user_id: str) -> User:
    user = db.session.get(User, user_id)
    if user is None:
        raise NotFound(f"No user {user_id!r}.")
    return user


def _active_admin_ids() -> Select[str]:
    app_user = User.__table__
    return (select(app_user.c.id).join(UserRole, UserRole.user_id == app_user.c.id)
            .where(UserRole.role_name == ADMIN, app_user.c.is_active.is_(True))
            .order_by(app_user.c.id))


def guard_last_admin(user: User) -> None:
    """409 when ``user`` is the last active administrator: call it before taking their ADMIN
    role or deactivating them, through whichever door.

    The active administrators' rows are locked (until the unit of work ends) before they are
    counted, so two administrators removing each other at the same moment are served one
    after the other and the second one counts after the first has committed. The count is a
    statement of its own, run after the lock is granted: on PostgreSQL (read committed) it
    sees that commit even when the first took a role away without touching the user row.
    Whether ``user`` is an active administrator is read there too, not from the object
    loaded before the lock.
    """
    # FOR UPDATE in id order, so two guards never deadlock; SQLite ignores it: its BEGIN
    # IMMEDIATE already lets one writer in at a time.
    db.session.execute(_active_admin_ids().with_for_update(of=User.__table__))
    if list(db.session.scalars(_active_admin_ids())) == [user.id]:
        raise Conflict("This is the last active administrator; make another user ADMIN "
                       "first.", code="last_admin")


def update_user(actor: Actor, changes: dict[str, Any]) -> User:
    """``PUT /api/user``: the caller edits themselves (name, email, initials, settings); an
    ADMIN edits anyone and may also move, (de)activate or reset the password.

    Resetting another user's password ends all their logins and revokes all their personal
    access tokens."""
    named, alias = changes.pop("userID", None), changes.pop("id", None)
    if named and alias and named != alias:
        raise InvalidInput("userID and id name different users; give one of them.",
                           errors=[{"field": "id", "message": "differs from userID"}])
    target_id = named or alias or actor.author_id
    if target_id != actor.user_id and not actor.is_admin:
        raise Forbidden("Only an administrator may change another user.", code="missing_scope")
    user = get_user(target_id)
    allowed = ADMIN_EDITABLE if actor.is_admin else SELF_EDITABLE
    # A field the caller may not change is refused only when its value would change: the user
    # as GET answered it can be sent back (decisions §4).
    refused = sorted(name for name in set(changes) - set(allowed)
                     if name not in _ATTRIBUTES
                     or changes[name] != getattr(user, _ATTRIBUTES[name]))
    if refused:
        raise Forbidden(f"You may not change {', '.join(refused)}.", code="forbidden_field")
    if "departmentID" in changes and db.session.get(Department, changes["departmentID"]) is None:
        raise InvalidInput(f"Unknown department {changes['departmentID']!r}.",
                           errors=[{"field": "departmentID", "message": "unknown department"}])
    if changes.get("isActive") is False:
        guard_last_admin(user)
    if "password" in changes:
        set_password(user, changes.pop("password"))
        if user.id == actor.user_id:
            # An administrator setting their own password changes it, as a user would.
            sessions.revoke_other_sessions(user.id, actor.session_id)
        else:
            # A reset: the account may be compromised, so nothing that was issued survives.
            sessions.revoke_other_sessions(user.id, None)
            pats.revoke_all(user.id)
    changed = diff(user, changes, _ATTRIBUTES)
    assign(user, changed, _ATTRIBUTES)
    # Settings are the user's preferences: stored, never audited.
    audited = {name: change for name, change in changed.items() if name != "settings"}
    if "isActive" in audited:
        status = "Active" if user.is_active else "Inactive"
        if status != user.status:
            audited["status"] = (user.status, status)
            user.status = status
        if not user.is_active:
            end_logins(user.id)
    if audited:
        user.version += 1
        user.modified_by = actor.author_id
        user.modified_utc = utc_now()
        record_updated(user, actor.author_id, audited)
    db.session.flush()
    return user


def list_users() -> list[User]:
    """Every user, active or not, by id."""
    return list(db.session.scalars(select(User).order_by(User.id)))


def list_roles() -> list[Role]:
    return list(db.session.scalars(select(Role).order_by(Role.name)))


def _role(name: str) -> Role:
    role = db.session.get(Role, name)
    if role is None:
        raise InvalidInput(f"Unknown role {name!r}.",
                           errors=[{"field": "name", "message": "unknown role"}])
    return role


def end_logins(user_id: str) -> None:
    """End every login of a deactivated user, so reactivation does not revive old tokens."""
    sessions.revoke_other_sessions(user_id, None)


def _record_roles(actor: Actor, user: User, old_roles: list[str]) -> None:
    if user.roles == old_roles:
        return
    user.version += 1
    user.modified_by = actor.author_id
    user.modified_utc = utc_now()
    record_updated(user, actor.author_id, {"roles": (old_roles, user.roles)})


def assign_role(role_name: str, user_id: str, actor: Actor) -> User:
    """Give a user a role (no change when they hold it already); the change is audited."""
    _role(role_name)
    user = get_user(user_id)
    old_roles = user.roles
    if role_name not in old_roles:
        user.role_links.append(UserRole(role_name=role_name))
        db.session.flush()
        _record_roles(actor, user, old_roles)
    return user


def revoke_role(role_name: str, user_id: str, actor: Actor) -> User:
    """Take a role from a user; taking ADMIN from the last active administrator is 409.
    The change is audited."""
    _role(role_name)
    user = get_user(user_id)
    if role_name == ADMIN:
        guard_last_admin(user)
    old_roles = user.roles
    user.role_links = [link for link in user.role_links if link.role_name != role_name]
    db.session.flush()
    _record_roles(actor, user, old_roles)
    return user


def ensure_roles() -> list[str]:
    """Create the built-in roles that are missing; return their names."""
    existing = set(db.session.scalars(select(Role.name)))
    missing = [name for name in BUILT_IN_ROLES if name not in existing]
    db.session.add_all(Role(name=name, description=BUILT_IN_ROLES[name]) for name in missing)
    db.session.flush()
    return missing


def reset_second_factor(actor: Actor, user_id: str) -> bool:
    """An administrator removes a user's second factor (a lost phone): they sign in with
    their password alone again, or set up a new one. Answers whether there was one; raises
    :class:`Forbidden` for anyone else and :class:`NotFound` for an unknown user."""
    if not actor.is_admin:
        raise Forbidden("Only an administrator may reset another user's second factor.",
                        code="missing_scope")
    return second_factor.remove(get_user(user_id).id)
