"""What creating or updating a ``User`` through the entity batch also does.

A username must work in Basic credentials and the login form; a new user needs a strong
password (hashed, never stored in clear); an e-mail address holds no control character (it
becomes the ``To`` header of alert e-mails), as ``PUT /api/user`` checks too; ``status``
(Active/Inactive) and ``isActive`` always agree; deactivating a user is refused for the last
administrator and ends every login of theirs at once, as ``PUT /api/user`` does.
"""
from __future__ import annotations

from typing import Any

from marshmallow import ValidationError

from labapp.auth import secrets
from labapp.entities.batch import BatchInputError, PreparedItem
from labapp.entities.notation import item_error
from labapp.entities.rules import ClassRules
from labapp.errors import InvalidInput
from labapp.model import Entity, User
from labapp.schemafields import NoControlCharacters
from labapp.users.service import USERNAME_PATTERN, end_logins, guard_last_admin


class UserRules(ClassRules):
    """The rules of the ``User`` class."""

    def complete_new_row(self, item: PreparedItem, own: dict[str, Any]) -> None:
        if not USERNAME_PATTERN.fullmatch(item.id):
            raise item_error(item.index, "id", "a username is 1 to 64 letters, digits or "
                                               ". _ @ -, starting with a letter or digit",
                             BatchInputError)
        problem = _email_problem(item.values.get("email"))
        if problem:
            raise item_error(item.index, "email", problem, BatchInputError)
        own.update(password_hash=_password_hash(item), settings={},
                   is_active=own.get("is_active", True) is not False)

    def created_api(self, data: dict[str, Any]) -> None:
        data["roles"] = []

    def before_update(self, changed: Entity, changes: dict[str, tuple[Any, Any]]) -> None:
        if not isinstance(changed, User):
            raise TypeError(f"User rules called on a {type(changed).__name__}")
        entity = changed
        problem = _email_problem(changes.get("email", (None, None))[1])
        if problem:
            raise InvalidInput(f"email: {problem}",
                               errors=[{"field": "email", "message": problem}])
        _mirror_activity(entity, changes)
        if changes.get("isActive", (None, True))[1] is False:
            guard_last_admin(entity)
            end_logins(entity.id)


def _email_problem(email: Any) -> str | None:
    """What is wrong with an e-mail address for a header (None: nothing)."""
    if not isinstance(email, str):
        return None
    try:
        NoControlCharacters()(email)
    except ValidationError as error:
        return " ".join(str(message) for message in error.messages)
    return None


def _password_hash(item: PreparedItem) -> str:
    password = item.extras.get("password")
    if not isinstance(password, str):
        raise item_error(item.index, "password", "required when a user is created",
                         BatchInputError)
    problem = secrets.password_problem(password)
    if problem:
        raise item_error(item.index, "password", problem, BatchInputError)
    return secrets.hash_password(password)


def _mirror_activity(user: User, changes: dict[str, tuple[Any, Any]]) -> None:
    """A user's ``status`` and ``isActive`` always agree, whichever is sent."""
    if "isActive" in changes and "status" not in changes:
        status = "Active" if changes["isActive"][1] else "Inactive"
        if status != user.status:
            changes["status"] = (user.status, status)
    elif "status" in changes and "isActive" not in changes:
        active = changes["status"][1] == "Active"
        if active != user.is_active:
            changes["isActive"] = (user.is_active, active)
