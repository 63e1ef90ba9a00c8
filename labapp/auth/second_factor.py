"""The second factor of local password accounts: TOTP (RFC 6238, ``pyotp``) and recovery codes.

A user enrols in two steps: :func:`begin_enrolment` keeps a new secret unconfirmed, and
:func:`confirm_enrolment` puts it in force once a code made from it is right, answering the
recovery codes (shown once, stored as SHA-256 hashes: 80 random bits each, so a fast hash is
enough). The TOTP secret must be read back to check codes, so the database keeps it sealed
(:mod:`labapp.sealing`): a copy of the database alone does not give anyone the codes. A code
is accepted for the time step before, at and after now (clocks drift), and never twice: the
accepted step is claimed by one conditional UPDATE, so of two requests with the same code
only one wins, on any worker or host. A recovery code is claimed the same way.

Who must have one is the setting ``REQUIRE_SECOND_FACTOR`` (:func:`must_enrol`); only local
accounts (``auth_source == "local"``) take part: directory accounts sign in where their
directory says. Nothing here commits; callers run it inside their unit of work.
"""
from __future__ import annotations

import logging
import re
import secrets
from dataclasses import dataclass
from datetime import datetime

import pyotp
from flask import current_app
from itsdangerous import BadSignature, URLSafeTimedSerializer
from sqlalchemy import Connection, delete, exists, func, or_, select, update

from labapp import sealing
from labapp.access.actor import ADMIN
from labapp.auth import secrets as tokens
from labapp.db import db, rows_matched
from labapp.errors import Conflict, NotAuthenticated
from labapp.model import RecoveryCode, SecondFactor, User
from labapp.model.types import utc_now

ISSUER = "labapp"
PURPOSE = b"labapp second factor v1"
RECOVERY_CODE_COUNT = 10
# Unambiguous when read aloud or off paper: no 0/O, no 1/I.
_RECOVERY_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
_RECOVERY_GROUPS, _RECOVERY_GROUP_LENGTH = 4, 4
_RECOVERY_LENGTH = _RECOVERY_GROUPS * _RECOVERY_GROUP_LENGTH  # 16 characters of 5 bits: 80 bits
_TOTP_CODE = re.compile(r"[0-9]{6}")
_RECOVERY_CODE = re.compile(f"[{_RECOVERY_ALPHABET}]{{{_RECOVERY_LENGTH}}}")
_SEPARATORS = re.compile(r"[\s-]")
# The longest input looked at: a recovery code with generous spacing; anything longer is wrong.
MAX_CODE_LENGTH = 64
# How long the second step of a browser's login may wait for its code.
PENDING_SECONDS = 300
_PENDING_SALT = "labapp.second-factor-pending"
TOTP = "totp"
RECOVERY = "recovery_code"
logger = logging.getLogger(__name__)


class SecondFactorRequired(NotAuthenticated):
    """The password was right, but the account signs in with a second factor."""

    code = "second_factor_required"

    def __init__(self, detail: str = "This account has a second factor: send the current "
                                     "code from the authenticator app (or a recovery code) "
                                     "in the field `code`.") -> None:
        super().__init__(detail)


class EnrolmentRequired(NotAuthenticated):
    """The account must have a second factor and has none yet."""

    code = "second_factor_enrolment_required"

    def __init__(self) -> None:
        super().__init__("This account must sign in with a second factor and has none yet: "
                         "log in on the login page once to set it up.")


class InvalidCode(NotAuthenticated):
    """The code is wrong, expired, malformed or was already used."""

    code = "invalid_code"

    def __init__(self, method: str) -> None:
        super().__init__("The code is not correct or was already used.")
        self.method = method


def new_secret() -> str:
    """A random TOTP secret (base32, 160 bits as RFC 4226 recommends)."""
    return pyotp.random_base32(length=32)


def provisioning_uri(user_id: str, secret: str) -> str:
    """The ``otpauth://`` URI an authenticator app reads from the QR code."""
    return pyotp.TOTP(secret).provisioning_uri(name=user_id, issuer_name=ISSUER)


def is_enrolled(user_id: str) -> bool:
    """Whether the user has a confirmed second factor."""
    return bool(db.session.scalar(select(exists().where(
        SecondFactor.user_id == user_id, SecondFactor.confirmed_utc.is_not(None)))))


def confirmed_at(user_id: str) -> datetime | None:
    """When the user's second factor was confirmed, or None when they have none in force."""
    factor = db.session.get(SecondFactor, user_id)
    return factor.confirmed_utc if factor is not None else None


def recovery_codes_left(user_id: str) -> int:
    return db.session.scalar(select(func.count()).select_from(RecoveryCode).where(
        RecoveryCode.user_id == user_id, RecoveryCode.used_utc.is_(None))) or 0


def must_enrol(roles: list[str] | frozenset[str], auth_source: str) -> bool:
    """Whether ``REQUIRE_SECOND_FACTOR`` demands a second factor of such an account."""
    if auth_source != "local":
        return False
    required = current_app.config["LABAPP"]["REQUIRE_SECOND_FACTOR"]
    return required == "all" or (required == "admin" and ADMIN in roles)


def blocks_basic_password(user_id: str, roles: frozenset[str], auth_source: str) -> bool:
    """Whether Basic ``username:password`` is refused to this account: it has a second factor
    or must have one (decisions §19; it uses a personal access token instead)."""
    return must_enrol(roles, auth_source) or is_enrolled(user_id)


def _local_user(user_id: str) -> User:
    user = db.session.get(User, user_id)
    if user is None or user.auth_source != "local" or user.password_hash is None:
        raise Conflict("Only accounts that sign in with a local password have a second "
                       "factor here.", code="not_local_account")
    return user


def begin_enrolment(user_id: str) -> str:
    """Keep a new, unconfirmed secret for the user (replacing an unconfirmed one) and answer
    it. Raises :class:`Conflict` when a second factor is already in force."""
    _local_user(user_id)
    factor = db.session.get(SecondFactor, user_id)
    if factor is not None and factor.confirmed_utc is not None:
        raise Conflict("A second factor is already set up; disable it first.",
                       code="second_factor_exists")
    secret = new_secret()
    sealed = seal_secret(secret)
    if factor is None:
        db.session.add(SecondFactor(user_id=user_id, secret=sealed, created_utc=utc_now()))
    else:
        factor.secret, factor.created_utc, factor.last_step = sealed, utc_now(), None
    db.session.flush()
    return secret


def seal_secret(secret: str) -> str:
    """A TOTP secret as the database keeps it: sealed under ``SECRET_KEY``."""
    return sealing.seal(secret, sealing.current_keys()[0], PURPOSE)


def seal_under_current_key(connection: Connection) -> int:
    """Seal under ``SECRET_KEY`` alone the secrets that are not: kept in clear (by an older
    labapp, or a restored backup of one) or opened only by a fallback key; answer how many.
    The rows are read whole: one per enrolled account."""
    keys = sealing.current_keys()
    kept = connection.execute(select(SecondFactor.user_id, SecondFactor.secret)).all()
    changed = 0
    for user_id, stored in kept:
        anew = sealing.sealed_anew(stored, keys, PURPOSE)
        if anew is not None:
            connection.execute(update(SecondFactor).where(SecondFactor.user_id == user_id)
                               .values(secret=anew))
            changed += 1
    return changed


def _opened(factor: SecondFactor) -> str | None:
    """The factor's TOTP secret, or None (logged) when it opens with none of the keys: its
    owner signs in with a recovery code, or an administrator resets the factor."""
    try:
        return sealing.unseal(factor.secret, sealing.current_keys(), PURPOSE)
    except sealing.Unreadable as error:
        logger.error("The second factor of %r cannot be read (%s): it accepts recovery codes "
                     "only until its owner or an administrator sets it up again.",
                     factor.user_id, error)
        return None


def pending_secret(user_id: str) -> str | None:
    """The secret of an enrolment begun and not yet confirmed, or None."""
    factor = db.session.get(SecondFactor, user_id)
    return _opened(factor) if factor is not None and factor.confirmed_utc is None else None


def _normalised(code: str) -> str:
    return _SEPARATORS.sub("", code[:MAX_CODE_LENGTH]).upper()


def method_of(code: str) -> str:
    """``totp`` for six digits, else ``recovery_code`` (what the code claims to be)."""
    return TOTP if _TOTP_CODE.fullmatch(_normalised(code)) else RECOVERY


def _matching_step(secret: str, code: str) -> int | None:
    """The time step (now, one before or one after) whose code is ``code``, or None."""
    totp = pyotp.TOTP(secret)
    now_step = totp.timecode(utc_now())
    for step in (now_step, now_step - 1, now_step + 1):
        if tokens.same(totp.generate_otp(step), code):
            return step
    return None


def _claim_step(user_id: str, step: int, *, confirmed: bool) -> bool:
    """Record ``step`` as the last accepted one unless it (or a later one) already was."""
    in_force = (SecondFactor.confirmed_utc.is_not(None) if confirmed
                else SecondFactor.confirmed_utc.is_(None))
    return rows_matched(
        update(SecondFactor)
        .where(SecondFactor.user_id == user_id, in_force,
               or_(SecondFactor.last_step.is_(None), SecondFactor.last_step < step))
        .values(last_step=step).execution_options(synchronize_session=False)) == 1


def _recovery_hash(code: str) -> str:
    return tokens.token_hash(code)


def _new_recovery_code() -> str:
    characters = "".join(secrets.choice(_RECOVERY_ALPHABET)
                         for _ in range(_RECOVERY_LENGTH))
    return "-".join(characters[i:i + _RECOVERY_GROUP_LENGTH]
                    for i in range(0, len(characters), _RECOVERY_GROUP_LENGTH))


def confirm_enrolment(user_id: str, code: str) -> list[str]:
    """Put the pending secret in force when ``code`` is right; answer the new recovery codes
    (their values exist only in this answer). Raises :class:`InvalidCode` and
    :class:`Conflict` (nothing pending)."""
    secret = pending_secret(user_id)
    if secret is None:
        raise Conflict("There is no second factor being set up; start again.",
                       code="no_enrolment_pending")
    normalised = _normalised(code)
    step = _matching_step(secret, normalised) if _TOTP_CODE.fullmatch(normalised) else None
    if step is None or not _claim_step(user_id, step, confirmed=False):
        raise InvalidCode(TOTP)
    db.session.execute(update(SecondFactor).where(SecondFactor.user_id == user_id)
                       .values(confirmed_utc=utc_now())
                       .execution_options(synchronize_session=False))
    db.session.execute(delete(RecoveryCode).where(RecoveryCode.user_id == user_id))
    codes = [_new_recovery_code() for _ in range(RECOVERY_CODE_COUNT)]
    db.session.add_all(RecoveryCode(user_id=user_id, code_hash=_recovery_hash(_normalised(c)))
                       for c in codes)
    db.session.flush()
    return codes


def verify(user_id: str, code: str) -> str:
    """Accept a current TOTP code or an unused recovery code of the user's second factor in
    force, using it up; answer which it was (``totp`` or ``recovery_code``).

    Raises :class:`InvalidCode` for anything else: a wrong, malformed or over-long code, a
    code of a step already accepted, a used recovery code, or no second factor in force.
    """
    normalised = _normalised(code)
    method = method_of(code)
    if len(code) > MAX_CODE_LENGTH:
        raise InvalidCode(method)
    if method == TOTP:
        factor = db.session.get(SecondFactor, user_id)
        secret = (_opened(factor) if factor is not None and factor.confirmed_utc is not None
                  else None)
        step = _matching_step(secret, normalised) if secret is not None else None
        if step is None or not _claim_step(user_id, step, confirmed=True):
            raise InvalidCode(method)
        return method
    if not _RECOVERY_CODE.fullmatch(normalised) or rows_matched(
            update(RecoveryCode)
            .where(RecoveryCode.user_id == user_id,
                   RecoveryCode.code_hash == _recovery_hash(normalised),
                   RecoveryCode.used_utc.is_(None),
                   exists().where(SecondFactor.user_id == user_id,
                                  SecondFactor.confirmed_utc.is_not(None)))
            .values(used_utc=utc_now()).execution_options(synchronize_session=False)) != 1:
        raise InvalidCode(method)
    return method


def remove(user_id: str) -> bool:
    """Delete the user's second factor and its recovery codes (disabled by its owner or reset
    by an administrator); answer whether there was one."""
    return rows_matched(delete(SecondFactor).where(SecondFactor.user_id == user_id)
                        .execution_options(synchronize_session=False)) > 0


def disable(user_id: str, code: str) -> str:
    """Remove the user's second factor after a current code or a recovery code proves its
    owner is here; answer the method used. Raises :class:`InvalidCode`."""
    method = verify(user_id, code)
    remove(user_id)
    return method


# ---- The browser's pending second step --------------------------------------------------------

@dataclass(frozen=True)
class PendingLogin:
    """A password proved in this browser, waiting for the second step (a code, or enrolment).

    ``password_fingerprint`` is the SHA-256 of the password hash it matched, so a password
    changed meanwhile ends the wait; the hash itself never leaves the server.
    """

    user_id: str
    password_fingerprint: str
    keep_alive: bool


def _serializer() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(current_app.config["SECRET_KEY"], salt=_PENDING_SALT)


def sign_pending(user_id: str, password_hash: str, keep_alive: bool) -> str:
    """The signed, timed value that keeps a pending second step (for the browser's session)."""
    return _serializer().dumps({"u": user_id, "p": tokens.token_hash(password_hash),
                                "k": keep_alive})


def read_pending(value: str | None) -> PendingLogin | None:
    """The pending second step of a signed value younger than :data:`PENDING_SECONDS`, else
    None (absent, expired or forged)."""
    if not value:
        return None
    try:
        claims = _serializer().loads(value, max_age=PENDING_SECONDS)
    except BadSignature:
        return None
    if not isinstance(claims, dict):
        return None
    return PendingLogin(str(claims.get("u", "")), str(claims.get("p", "")),
                        bool(claims.get("k", False)))


def pending_still_holds(pending: PendingLogin) -> User | None:
    """The pending login's user, unless the account or its password changed since."""
    user = db.session.get(User, pending.user_id)
    if (user is None or not user.is_active or user.password_hash is None
            or not tokens.same(tokens.token_hash(user.password_hash),
                               pending.password_fingerprint)):
        return None
    return user
