"""The account's use cases, shared by the API and the pages: logging in with a password and
changing one's own password. The caller passes the client's address (throttling is per user
and per address); nothing here reads the request."""
from __future__ import annotations

from labapp.access.actor import Actor
from labapp.auth import passwords, sessions, throttle
from labapp.auth.sessions import TokenPair
from labapp.db import transaction


def login_with_password(username: str, password: str, keep_alive: bool,
                        address: str) -> TokenPair:
    """Log in and commit; a failed attempt is recorded (committed) before the 401 is raised.

    The password is verified before the write transaction that opens the login begins.
    Raises :class:`~labapp.auth.sessions.InvalidCredentials` or
    :class:`~labapp.errors.TooManyRequests`.
    """
    verified = sessions.verify_password(username, password, address)
    with transaction():
        return sessions.login(verified, keep_alive, address)


def change_own_password(actor: Actor, password: str, repeat: str, current: str,
                        address: str) -> None:
    """Throttled like a login; the passwords are checked before the short write that stores
    the change, and a wrong current password is recorded as a failed attempt.

    Raises :class:`~labapp.errors.InvalidInput` (the fields) or
    :class:`~labapp.errors.TooManyRequests`.
    """
    throttle.check(actor.author_id, address)
    try:
        change = passwords.check_change(actor, password, repeat, current)
    except passwords.WrongCurrentPassword:
        with transaction():
            throttle.record_failure(actor.author_id, address)
        raise
    with transaction():
        passwords.apply_change(change, actor.session_id)
