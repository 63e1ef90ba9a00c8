"""Logins: password check, login sessions, access tokens, refresh-token rotation, logout.

A login creates a :class:`LoginSession`. Its access tokens (signed, 20 minutes), its browser
cookie (signed session id) and its refresh tokens (random, stored hashed, used once) all die
when the session is revoked. Presenting a refresh token that was already used revokes the
whole session, since one of its copies has been stolen.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from flask import current_app
from itsdangerous import BadSignature, URLSafeTimedSerializer
from sqlalchemy import select, update

from labapp.auth import basic_cache, ldap, sign_in_log, throttle
from labapp.auth import secrets as tokens
from labapp.db import db, rows_matched, transaction
from labapp.errors import NotAuthenticated
from labapp.model import LoginSession, RefreshToken, User
from labapp.model.types import utc_now

ACCESS_TOKEN_SECONDS = 20 * 60
SESSION_LIFETIME = timedelta(hours=12)
KEEP_ALIVE_LIFETIME = timedelta(days=30)
_ACCESS_SALT = "labapp.access-token"
_COOKIE_SALT = "labapp.session-cookie"


class InvalidCredentials(NotAuthenticated):
    """Wrong username or password; the caller records the failure in its own transaction.

    ``user_id`` (the account the username names, if any) and ``reason`` are for the sign-in
    log only; the answer never tells them.
    """

    code = "invalid_credentials"

    def __init__(self, user_id: str | None = None, reason: str = "wrong_password",
                 method: str | None = None) -> None:
        super().__init__("Invalid username or password.")
        self.user_id = user_id
        self.reason = reason
        self.method = method  # what refused it, when not the caller's method


class InvalidToken(NotAuthenticated):
    code = "invalid_token"


class RefreshTokenReused(InvalidToken):
    """A used refresh token came back; the caller revokes ``session_id`` and commits."""

    def __init__(self, session_id: str) -> None:
        super().__init__("This refresh token was already used; the login has been revoked.")
        self.session_id = session_id


@dataclass(frozen=True)
class TokenPair:
    access_token: str
    refresh_token: str
    session_id: str
    user_id: str
    keep_alive: bool
    expires_in: int = ACCESS_TOKEN_SECONDS
    token_type: str = "Bearer"


def _serializer(salt: str) -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(current_app.config["SECRET_KEY"], salt=salt)


@dataclass(frozen=True)
class VerifiedPassword:
    """A password that matched: the hash it matched, and a fresh hash of it when that one
    uses outdated parameters (to be stored by :func:`store_fresh_hash` or :func:`login`)."""

    user_id: str
    password_hash: str
    fresh_hash: str | None = None
    method: str = sign_in_log.PASSWORD  # what checked it, as the sign-in log names it


def check_password(username: str, password: str) -> VerifiedPassword:
    """Verify a password, reading only: call it outside any write transaction.

    Raises :class:`InvalidCredentials`. Unknown users, wrong passwords and deactivated users
    get the same answer and take the same time, so the answer never reveals whether a
    username exists. With LDAP on, the directory checks the password of its users and of
    usernames labapp does not know (:func:`labapp.auth.ldap.sign_in`, which brings the
    user in line with the directory in a short write of its own), and
    :class:`~labapp.auth.ldap.DirectoryUnavailable` (503) says when it does not answer.
    """
    user = db.session.get(User, username) if username else None
    if ldap.handles(user.auth_source if user is not None else None):
        try:
            return VerifiedPassword(ldap.sign_in(username, password), ldap.NO_LOCAL_PASSWORD,
                                    method=sign_in_log.LDAP)
        except ldap.DirectoryRefused:
            raise InvalidCredentials(user.id if user is not None else None, "directory_refused",
                                     sign_in_log.LDAP) from None
    stored = user.password_hash if user is not None else None
    # Verified first, whatever the user: unknown users take as long as known ones.
    verified = tokens.verify_password(stored, password)
    if user is None:
        raise InvalidCredentials(reason="unknown_user")
    if not verified or stored is None:
        raise InvalidCredentials(user.id)
    if not user.is_active:
        raise InvalidCredentials(user.id, "inactive")
    fresh = tokens.hash_password(password) if tokens.needs_rehash(stored) else None
    return VerifiedPassword(user.id, stored, fresh)


def verify_password(username: str, password: str, address: str) -> VerifiedPassword:
    """Check throttling, then the password, holding no write lock while Argon2 runs.

    A failure is recorded in a short write of its own before :class:`InvalidCredentials`
    propagates; a throttled attempt (:class:`~labapp.errors.TooManyRequests`) is not a failure.
    """
    throttle.check(username, address)
    return check_password_recording_failure(username, password, address)


def check_password_recording_failure(username: str, password: str, address: str,
                                     method: str = sign_in_log.PASSWORD) -> VerifiedPassword:
    """:func:`check_password`; a failure is recorded (committed) before it propagates, in
    the throttle and in the sign-in log as ``method``."""
    try:
        return check_password(username, password)
    except InvalidCredentials as failure:
        with transaction():
            throttle.record_failure(username, address)
            sign_in_log.record(username, failure.user_id, failure.method or method, None,
                               address, False, failure.reason)
        raise


def _still_valid(verified: VerifiedPassword) -> User:
    """The user of ``verified``, unless the password or the account changed since."""
    user = db.session.get(User, verified.user_id)
    if user is None or not user.is_active or user.password_hash != verified.password_hash:
        raise InvalidCredentials()
    return user


def store_fresh_hash(verified: VerifiedPassword) -> None:
    """Replace an outdated hash with the fresh one, unless the password changed meanwhile."""
    user = db.session.get(User, verified.user_id)
    if (verified.fresh_hash is not None and user is not None
            and user.password_hash == verified.password_hash):
        user.password_hash = verified.fresh_hash


def login(verified: VerifiedPassword, keep_alive: bool, address: str) -> TokenPair:
    """Open a login session for a verified password and issue its tokens (a short write).

    Forgets the username's failed attempts from ``address``; raises
    :class:`InvalidCredentials` when the password or the account changed since it was
    verified.
    """
    user = _still_valid(verified)
    if verified.fresh_hash is not None:
        user.password_hash = verified.fresh_hash
    throttle.clear(user.id, address)
    now = utc_now()
    session = LoginSession(id=tokens.new_token(), user_id=user.id, keep_alive=keep_alive,
                           created_utc=now, expires_utc=now + _lifetime(keep_alive))
    user.last_login_utc = now
    db.session.add(session)
    return _issue(session)


def login_verified_elsewhere(user: User) -> TokenPair:
    """Open a login session of the ordinary length for ``user``, whom a sign-in service
    (OpenID Connect) has just vouched for, and issue its tokens (a short write). The caller
    checked the user is active."""
    now = utc_now()
    session = LoginSession(id=tokens.new_token(), user_id=user.id, keep_alive=False,
                           created_utc=now, expires_utc=now + SESSION_LIFETIME)
    user.last_login_utc = now
    db.session.add(session)
    return _issue(session)


def _lifetime(keep_alive: bool) -> timedelta:
    return KEEP_ALIVE_LIFETIME if keep_alive else SESSION_LIFETIME


def _issue(session: LoginSession) -> TokenPair:
    value = tokens.new_token()
    db.session.add(RefreshToken(session_id=session.id, token_hash=tokens.token_hash(value),
                                created_utc=utc_now(), expires_utc=session.expires_utc))
    db.session.flush()
    access = _serializer(_ACCESS_SALT).dumps({"u": session.user_id, "s": session.id})
    return TokenPair(access, value, session.id, session.user_id, session.keep_alive)


def refresh(value: str) -> TokenPair:
    """Rotate a refresh token: mark it used and issue a new pair for the same login.

    Raises :class:`InvalidToken` for an unknown, expired or revoked token and
    :class:`RefreshTokenReused` for one that was already used.
    """
    now = utc_now()
    row = db.session.execute(
        select(RefreshToken, LoginSession)
        .join(LoginSession, RefreshToken.session_id == LoginSession.id)
        .where(RefreshToken.token_hash == tokens.token_hash(value))).first()
    if row is None:
        raise InvalidToken("Unknown refresh token.")
    token, session = row
    if session.revoked_utc is not None or now >= min(token.expires_utc, session.expires_utc):
        raise InvalidToken("This refresh token has expired or was revoked.")
    # Only one of two concurrent refreshes with the same token can win this update.
    claimed = rows_matched(
        update(RefreshToken).where(RefreshToken.id == token.id, RefreshToken.used_utc.is_(None))
        .values(used_utc=now).execution_options(synchronize_session=False))
    if claimed != 1:
        raise RefreshTokenReused(session.id)
    user = db.session.get(User, session.user_id)
    if user is None or not user.is_active:
        raise InvalidToken("The account is deactivated.")
    session.expires_utc = now + _lifetime(session.keep_alive)
    return _issue(session)


def revoke_session(session_id: str) -> None:
    """End a login: its cookie, access tokens and refresh tokens stop working at once."""
    db.session.execute(update(LoginSession).where(LoginSession.id == session_id,
                                                  LoginSession.revoked_utc.is_(None))
                       .values(revoked_utc=utc_now())
                       .execution_options(synchronize_session=False))


def revoke_other_sessions(user_id: str, keep_session_id: str | None) -> None:
    """End every login of ``user_id`` except ``keep_session_id`` (after a password change,
    a reset or a deactivation), and drop this worker's memory of their Basic password."""
    basic_cache.forget(user_id)
    condition = [LoginSession.user_id == user_id, LoginSession.revoked_utc.is_(None)]
    if keep_session_id:
        condition.append(LoginSession.id != keep_session_id)
    db.session.execute(update(LoginSession).where(*condition).values(revoked_utc=utc_now())
                       .execution_options(synchronize_session=False))


def find_session_of_refresh_token(value: str) -> str | None:
    """The login a refresh token belongs to, or None when the token is unknown."""
    return db.session.scalar(select(RefreshToken.session_id)
                             .where(RefreshToken.token_hash == tokens.token_hash(value)))


def session_of_refresh_token(value: str) -> str:
    """The login a refresh token belongs to; raises :class:`InvalidToken` when unknown."""
    session_id = find_session_of_refresh_token(value)
    if session_id is None:
        raise InvalidToken("Unknown refresh token.")
    return session_id


def session_cookie_value(session_id: str, user_id: str) -> str:
    """The signed browser cookie of a login."""
    return _serializer(_COOKIE_SALT).dumps({"u": user_id, "s": session_id})


def access_token_login(token: str) -> tuple[str, str]:
    """``(user id, login id)`` of a well-signed, unexpired access token; raises
    :class:`InvalidToken`. Whether the login still holds is for
    :func:`labapp.auth.actors.actor_for_login`, which reads it with the user."""
    try:
        claims = _serializer(_ACCESS_SALT).loads(token, max_age=ACCESS_TOKEN_SECONDS)
    except BadSignature:
        raise InvalidToken("The access token is invalid or has expired.") from None
    return str(claims.get("u", "")), str(claims.get("s", ""))


def session_cookie_login(cookie: str) -> tuple[str, str] | None:
    """``(user id, login id)`` of a well-signed browser cookie, or None when it is stale or
    forged (whether the login still holds: as for :func:`access_token_login`)."""
    try:
        claims = _serializer(_COOKIE_SALT).loads(
            cookie, max_age=int(KEEP_ALIVE_LIFETIME.total_seconds()))
    except BadSignature:
        return None
    return str(claims.get("u", "")), str(claims.get("s", ""))
