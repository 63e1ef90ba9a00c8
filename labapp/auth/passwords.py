"""Setting and changing passwords."""
from __future__ import annotations

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


def set_password(user: User, password: str, field: str = "password") -> None:
    """Give ``user`` a new password after checking its strength (400 naming ``field``)."""
    problem = tokens.password_problem(password)
    if problem:
        raise InvalidInput(f"The new password {problem}.",
                           errors=[{"field": field, "message": problem}])
    user.password_hash = tokens.hash_password(password)


def change_password(actor: Actor, password: str, repeat: str, current: str) -> None:
    """Change the actor's own password; every other login of theirs is ended.

    Personal access tokens stay valid: they are revoked one by one by their owner.
    """
    if not tokens.same(password, repeat):
        raise InvalidInput("The new password and its repetition differ.",
                           errors=[{"field": "repeatPassword", "message": "does not match"}])
    user = db.session.get(User, actor.user_id)
    if user is None or not tokens.verify_password(user.password_hash, current):
        raise WrongCurrentPassword()
    set_password(user, password)
    sessions.revoke_other_sessions(user.id, actor.session_id)
