"""The account's use cases, shared by the API and the pages: logging in with a password (and
a second factor), setting up and removing one's second factor, and changing one's own
password. The caller passes the client's address (throttling is per user and per address);
nothing here reads the request.

Every sign-in attempt leaves an event in the sign-in log (:mod:`labapp.auth.sign_in_log`),
committed with its outcome: the login, or the failed attempt the throttle counts.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from labapp.access.actor import Actor
from labapp.auth import passwords, second_factor, sessions, sign_in_log, throttle
from labapp.auth.second_factor import (
    EnrolmentRequired,
    InvalidCode,
    PendingLogin,
    SecondFactorRequired,
)
from labapp.auth.sessions import InvalidCredentials, TokenPair, VerifiedPassword
from labapp.db import db, transaction
from labapp.model import User


class NextStep(Enum):
    """What a right password still needs before the login opens."""

    NONE = "none"
    CODE = "code"  # the account has a second factor
    ENROL = "enrol"  # the account must have one and has not set it up


def next_step(user_id: str) -> NextStep:
    """The step after the password for this account (see :func:`second_factor.must_enrol`)."""
    if second_factor.is_enrolled(user_id):
        return NextStep.CODE
    user = db.session.get(User, user_id)
    if user is not None and second_factor.must_enrol(user.roles, user.auth_source):
        return NextStep.ENROL
    return NextStep.NONE


def _failed_code(user_id: str, failure: InvalidCode, address: str) -> None:
    """Record a wrong code (committed): it counts in the throttle like a wrong password."""
    with transaction():
        throttle.record_failure(user_id, address)
        sign_in_log.record(user_id, user_id, failure.method, None, address, False,
                           "invalid_code")


def login_with_password(username: str, password: str, keep_alive: bool, address: str,
                        code: str | None = None) -> TokenPair:
    """Log in with a password and, for an account with a second factor, its ``code`` (a
    current TOTP code or a recovery code); commit. A failed attempt is recorded (committed)
    before the 401 is raised.

    The password is verified before the write transaction that opens the login begins.
    Raises :class:`~labapp.auth.sessions.InvalidCredentials`,
    :class:`~labapp.auth.second_factor.SecondFactorRequired` (no code),
    :class:`~labapp.auth.second_factor.InvalidCode`,
    :class:`~labapp.auth.second_factor.EnrolmentRequired` or
    :class:`~labapp.errors.TooManyRequests`.
    """
    verified = sessions.verify_password(username, password, address)
    step = next_step(verified.user_id)
    if step is NextStep.ENROL:
        with transaction():
            sign_in_log.record(username, verified.user_id, verified.method, None, address,
                               False, EnrolmentRequired.code)
        raise EnrolmentRequired()
    if step is NextStep.CODE:
        if code is None:
            with transaction():
                sign_in_log.record(username, verified.user_id, verified.method, None,
                                   address, False, SecondFactorRequired.code)
            raise SecondFactorRequired()
        return _login_with_code(verified, code, keep_alive, address)
    with transaction():
        sign_in_log.record(username, verified.user_id, verified.method, None, address, True)
        return sessions.login(verified, keep_alive, address)


def _login_with_code(verified: VerifiedPassword, code: str, keep_alive: bool,
                     address: str) -> TokenPair:
    """Use up ``code`` and open the login in one write; a wrong code is recorded."""
    try:
        with transaction():
            method = second_factor.verify(verified.user_id, code)
            sign_in_log.record(verified.user_id, verified.user_id, method, None, address, True)
            return sessions.login(verified, keep_alive, address)
    except InvalidCode as failure:
        _failed_code(verified.user_id, failure, address)
        raise


# ---- The login page's steps -------------------------------------------------------------------

@dataclass(frozen=True)
class PasswordStep:
    """A right password on the login page: the login already open (``pair``), or the
    signed value of the pending step that follows (``pending``, kept by the browser)."""

    step: NextStep
    pair: TokenPair | None = None
    pending: str | None = None


def password_step(username: str, password: str, keep_alive: bool,
                  address: str) -> PasswordStep:
    """The login page's first step: the password; the login opens at once unless a second
    step follows. Raises as :func:`login_with_password`, but never for a missing code."""
    verified = sessions.verify_password(username, password, address)
    step = next_step(verified.user_id)
    if step is NextStep.NONE:
        with transaction():
            sign_in_log.record(username, verified.user_id, verified.method, None,
                               address, True)
            return PasswordStep(step, pair=sessions.login(verified, keep_alive, address))
    with transaction():
        sessions.store_fresh_hash(verified)
        sign_in_log.record(username, verified.user_id, verified.method, None, address,
                           True, f"{step.value}_pending")
        stored = db.session.get(User, verified.user_id)
        password_hash = stored.password_hash if stored is not None else None
    if password_hash is None:
        raise InvalidCredentials(verified.user_id)
    return PasswordStep(step, pending=second_factor.sign_pending(
        verified.user_id, password_hash, keep_alive))


def _held(pending: PendingLogin) -> VerifiedPassword:
    """The verified password of a pending step; InvalidCredentials when it changed since."""
    user = second_factor.pending_still_holds(pending)
    if user is None or user.password_hash is None:
        raise InvalidCredentials(pending.user_id)
    return VerifiedPassword(user.id, user.password_hash)


def code_step(pending: PendingLogin, code: str, address: str) -> TokenPair:
    """The login page's second step: the code of the account's second factor. Throttled and
    recorded like the password; raises :class:`InvalidCode`, ``InvalidCredentials`` (the
    password or account changed meanwhile) or ``TooManyRequests``."""
    throttle.check(pending.user_id, address)
    return _login_with_code(_held(pending), code, pending.keep_alive, address)


def enrolment_secret(pending: PendingLogin) -> str:
    """The secret being set up by a pending login that must enrol (begun on first call)."""
    _held(pending)
    with transaction(write=True):
        return (second_factor.pending_secret(pending.user_id)
                or second_factor.begin_enrolment(pending.user_id))


@dataclass(frozen=True)
class Enrolled:
    pair: TokenPair
    recovery_codes: list[str]


def enrol_step(pending: PendingLogin, code: str, address: str) -> Enrolled:
    """Confirm the second factor of a pending login that had to set one up, and open the
    login in the same write. Throttled and recorded like :func:`code_step`."""
    throttle.check(pending.user_id, address)
    verified = _held(pending)
    try:
        with transaction():
            codes = second_factor.confirm_enrolment(pending.user_id, code)
            sign_in_log.record(pending.user_id, pending.user_id, second_factor.TOTP, None,
                               address, True)
            return Enrolled(sessions.login(verified, pending.keep_alive, address), codes)
    except InvalidCode as failure:
        _failed_code(pending.user_id, failure, address)
        raise


# ---- One's own second factor ------------------------------------------------------------------

def begin_own_enrolment(actor: Actor) -> str:
    """Start setting up the actor's second factor (a new secret, unconfirmed)."""
    return second_factor.begin_enrolment(actor.author_id)


def confirm_own_enrolment(actor: Actor, code: str, address: str) -> list[str]:
    """Put the actor's pending second factor in force; answer the recovery codes. A wrong
    code is throttled and recorded as a failed attempt (committed)."""
    throttle.check(actor.author_id, address)
    try:
        with transaction():
            return second_factor.confirm_enrolment(actor.author_id, code)
    except InvalidCode:
        with transaction():
            throttle.record_failure(actor.author_id, address)
        raise


def disable_own(actor: Actor, code: str, address: str) -> None:
    """Remove the actor's second factor after a current or recovery code; a wrong code is
    throttled and recorded as a failed attempt (committed)."""
    throttle.check(actor.author_id, address)
    try:
        with transaction():
            second_factor.disable(actor.author_id, code)
    except InvalidCode:
        with transaction():
            throttle.record_failure(actor.author_id, address)
        raise


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
