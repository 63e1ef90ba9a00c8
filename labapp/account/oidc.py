"""Signing in with OpenID Connect, once the ID token is verified (:mod:`labapp.auth.oidc`):
the user is found by (``authSource`` ``oidc:<provider>``, the token's ``sub``), created when
the provider allows it, and a login opened. Nothing here reads the request.

A user found again gets their name, e-mail, department and mapped roles from the claims of
this sign-in (what the last sign-in said, decisions §19); roles the mapping does not name are
the administrators' and are left alone. A username is never linked to an existing account:
a claim naming a username that is already taken is refused.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from labapp.access.actor import ADMIN
from labapp.auth import sessions, sign_in_log
from labapp.auth.oidc import SignInRefused, VerifiedIdentity
from labapp.auth.sessions import TokenPair
from labapp.changes import assign, diff
from labapp.db import db, transaction
from labapp.entities.audit import record_updated
from labapp.errors import Conflict, InvalidInput
from labapp.model import Department, Entity, Role, User, UserRole
from labapp.model.types import utc_now
from labapp.oidc_settings import OidcProvider
from labapp.users.service import USERNAME_PATTERN, create_user, guard_last_admin

logger = logging.getLogger("labapp.sign_in")

_PROFILE_ATTRIBUTES = {"name": "name", "email": "email", "departmentID": "department_id"}


def record_sign_in(provider: str, *, succeeded: bool, address: str,
                   username: str | None = None, reason: str | None = None) -> None:
    """Every OpenID Connect sign-in, succeeded or refused, passes here (method ``oidc``,
    ``provider``, the client's ``address``, the user when known, why it was refused): into
    the sign-in log ADMIN reads (a write unit of its own: the views that call it open their
    own units), and the ``labapp.sign_in`` logger."""
    logger.info("oidc sign-in %s: provider=%s user=%s address=%s reason=%s",
                "succeeded" if succeeded else "refused", provider, username or "-",
                address, reason or "-")
    with transaction():
        sign_in_log.record(username or "", username if succeeded else None, "oidc", provider,
                           address, succeeded, reason)


@dataclass(frozen=True)
class ClaimedProfile:
    """What the claims of one sign-in say about the user."""

    username: str
    name: str
    email: str | None
    department_id: str | None
    roles: frozenset[str]


def _values(claim: Any) -> list[str]:
    """A claim as a list of strings (one string, a list of them, or absent)."""
    if isinstance(claim, str):
        return [claim]
    if isinstance(claim, list):
        return [item for item in claim if isinstance(item, str)]
    return []


def claimed_profile(provider: OidcProvider, claims: dict[str, Any]) -> ClaimedProfile:
    """Map the claims to a profile with the provider's settings."""
    username = claims.get(provider.username_claim)
    username = username.strip() if isinstance(username, str) else ""
    name = claims.get(provider.name_claim)
    email = claims.get(provider.email_claim)
    department_id = None
    if provider.department_claim:
        department_id = next((provider.departments[value]
                              for value in _values(claims.get(provider.department_claim))
                              if value in provider.departments), None)
    roles: set[str] = set()
    if provider.role_claim:
        for value in _values(claims.get(provider.role_claim)):
            roles.update(provider.roles.get(value, ()))
    return ClaimedProfile(username=username,
                          name=name if isinstance(name, str) and name.strip() else username,
                          email=email if isinstance(email, str) and email else None,
                          department_id=department_id, roles=frozenset(roles))


def _managed_roles(provider: OidcProvider) -> frozenset[str]:
    return frozenset(role for names in provider.roles.values() for role in names)


def _create(identity: VerifiedIdentity, profile: ClaimedProfile) -> User:
    provider = identity.provider
    if not provider.create_users:
        raise SignInRefused("unknown_user", f"You are signed in at {provider.display_name}, "
                            "but you have no account here; ask an administrator to add you.")
    if not USERNAME_PATTERN.match(profile.username):
        raise SignInRefused("username_invalid", f"{provider.display_name} gave no username "
                            "this application can use; ask an administrator.")
    if db.session.get(Entity, profile.username) is not None:
        raise SignInRefused("username_taken", f"The username {profile.username!r} belongs to "
                            "another account here; ask an administrator to link them.")
    try:
        return create_user(username=profile.username, name=profile.name,
                           department_id=profile.department_id or provider.default_department
                           or "", password=None, roles=sorted(profile.roles),
                           created_by=profile.username, email=profile.email,
                           auth_source=provider.auth_source, external_id=identity.subject)
    except (InvalidInput, Conflict) as exc:
        raise SignInRefused("misconfigured", "Your account could not be created here: "
                            f"{exc.detail} Tell an administrator.") from exc


def _refresh(user: User, provider: OidcProvider, profile: ClaimedProfile) -> None:
    """Bring name, e-mail, department and the mapped roles in line with the claims; audited
    as the user's own change."""
    values: dict[str, Any] = {"name": profile.name, "email": profile.email}
    if profile.department_id and db.session.get(Department, profile.department_id):
        values["departmentID"] = profile.department_id
    changes = diff(user, values, _PROFILE_ATTRIBUTES)
    assign(user, changes, _PROFILE_ATTRIBUTES)
    old_roles = user.roles
    managed = _managed_roles(provider)
    wanted = {role for role in profile.roles if db.session.get(Role, role) is not None}
    for link in list(user.role_links):
        if link.role_name in managed and link.role_name not in wanted:
            if link.role_name == ADMIN:
                try:
                    guard_last_admin(user)
                except Conflict:
                    continue
            user.role_links.remove(link)
    held = set(user.roles)
    user.role_links.extend(UserRole(role_name=role) for role in sorted(wanted - held))
    db.session.flush()
    if user.roles != old_roles:
        changes["roles"] = (old_roles, user.roles)
    if changes:
        user.version += 1
        user.modified_by = user.id
        user.modified_utc = utc_now()
        record_updated(user, user.id, changes)


def sign_in(identity: VerifiedIdentity) -> TokenPair:
    """Find or create the user of a verified identity and open their login (one commit): a
    login of the ordinary length, as the provider's own session makes signing in again cheap.

    Raises :class:`~labapp.auth.oidc.SignInRefused` for an unknown user when the provider
    creates none, a deactivated user, and a username that cannot be created.
    """
    provider = identity.provider
    profile = claimed_profile(provider, identity.claims)
    with transaction():
        user = db.session.scalar(select(User).where(
            User.auth_source == provider.auth_source, User.external_id == identity.subject))
        if user is None:
            user = _create(identity, profile)
        elif not user.is_active:
            raise SignInRefused("account_inactive", "Your account here is deactivated; ask an "
                                "administrator.")
        else:
            _refresh(user, provider, profile)
        return sessions.login_verified_elsewhere(user)
