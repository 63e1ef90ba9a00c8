"""Setting and changing passwords."""
from __future__ import annotations

from dataclasses import dataclass

from labapp.access.actor import Actor
from labapp.auth import secrets as tokens
from labapp.auth import sessions
from labapp.db import db
from labapp.errors import InvalidInput
from labapp.model import User


class WrongCurrentPassword(InvalidInput):
    """The current password did not match; the caller records a failed login attempt."""

    code = "wrong_password"

    def __init__(self) -> None:
        super().__init__("The current password is not correct.",
                         errors=[{"field": "confirmPassword", "message": "is not correct"}])


def _check_strength(password: str, field: str) -> None:
    problem = tokens.password_problem(password)
    if problem:
        raise InvalidInput(f"The new password {problem}.",
                           errors=[{"field": field, "message": problem}])


def set_password(user: User, password: str, field: str = "password") -> None:
    """Give ``user`` a new password after checking its strength (400 naming ``field``)."""
    _check_strength(password, field)
    user.password_hash = tokens.hash_password(password)


@dataclass(frozen=True)
class PasswordChange:
    """A checked change of a user's own password, stored by :func:`apply_change`."""

    user_id: str
    old_hash: str
    new_hash: str


def check_change(actor: Actor, password: str, repeat: str, current: str) -> PasswordChange:
    """Check a change of the actor's own password, reading only: call it outside any write
    transaction (it verifies the current password and hashes the new one, both Argon2).

    Raises :class:`InvalidInput` (the repetition differs, the new password is weak, the user
    signs in with a directory) and :class:`WrongCurrentPassword`.
    """
    if not tokens.same(password, repeat):
        raise InvalidInput("The new password and its repetition differ.",
                           errors=[{"field": "repeatPassword", "message": "does not match"}])
    user = db.session.get(User, actor.user_id)
    if user is not None and user.auth_source != "local":
        raise InvalidInput("Your password is kept where you sign in (your directory), not "
                           "here: change it there.",
                           errors=[{"field": "password", "message": "kept by your directory"}])
    if (user is None or not tokens.verify_password(user.password_hash, current)
            or user.password_hash is None):
        raise WrongCurrentPassword()
    _check_strength(password, "password")
    return PasswordChange(user.id, user.password_hash, tokens.hash_password(password))


def apply_change(change: PasswordChange, keep_session_id: str | None) -> None:
    """Store a checked change; every other login of the user ends.

    Personal access tokens stay valid: they are revoked one by one by their owner. Raises
    :class:`WrongCurrentPassword` when the password changed since it was checked.
    """
    user = db.session.get(User, change.user_id)
    if user is None or user.password_hash != change.old_hash:
        raise WrongCurrentPassword()
    user.password_hash = change.new_hash
    sessions.revoke_other_sessions(user.id, keep_session_id)
