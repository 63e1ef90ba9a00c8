"""Authentication state: login sessions, refresh tokens, personal access tokens, failed logins.

Secrets are never stored: tokens are kept as SHA-256 hashes of their random values.
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Boolean, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from labapp.db import Model
from labapp.model.types import UtcDateTime


class LoginSession(Model):
    """One login: the browser cookie, its access tokens and its chain of refresh tokens."""

    __tablename__ = "login_session"

    id: Mapped[str] = mapped_column(String(43), primary_key=True)
    user_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("app_user.id", ondelete="CASCADE"), index=True)
    keep_alive: Mapped[bool] = mapped_column(Boolean, default=False)
    created_utc: Mapped[datetime] = mapped_column(UtcDateTime)
    expires_utc: Mapped[datetime] = mapped_column(UtcDateTime)
    revoked_utc: Mapped[datetime | None] = mapped_column(UtcDateTime)


class RefreshToken(Model):
    """A refresh token of a login; used once, then replaced (rotation)."""

    __tablename__ = "refresh_token"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(
        String(43), ForeignKey("login_session.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_utc: Mapped[datetime] = mapped_column(UtcDateTime)
    expires_utc: Mapped[datetime] = mapped_column(UtcDateTime)
    used_utc: Mapped[datetime | None] = mapped_column(UtcDateTime)


class PersonalAccessToken(Model):
    """A long-lived token a user creates for scripts; sent as Basic ``username:PAT...``."""

    __tablename__ = "personal_access_token"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    user_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("app_user.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(255))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_utc: Mapped[datetime] = mapped_column(UtcDateTime)
    expires_utc: Mapped[datetime | None] = mapped_column(UtcDateTime)
    last_used_utc: Mapped[datetime | None] = mapped_column(UtcDateTime)
    revoked_utc: Mapped[datetime | None] = mapped_column(UtcDateTime)


class LoginFailure(Model):
    """A failed password check, kept for the throttling window (shared by all workers)."""

    __tablename__ = "login_failure"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    username: Mapped[str] = mapped_column(String(255), index=True)
    address: Mapped[str] = mapped_column(String(64), index=True)
    at_utc: Mapped[datetime] = mapped_column(UtcDateTime, index=True)


class RateLimitBucket(Model):
    """One rate-limit bucket (docs/decisions/rate-limits.md): a token, a user or a client
    address, as the theoretical arrival time of the generic cell rate algorithm.

    Times are whole nanoseconds since the epoch, so the arithmetic is exact. ``emission``
    (what one request costs) and ``capacity`` (how much the bucket holds: the policy's
    window) are the policy of the last request, stored so that one statement can charge
    buckets of different policies; ``allowed`` says whether that request fitted. A row
    whose ``tat`` has passed is a full bucket, the same as no row, and is pruned.
    """

    __tablename__ = "rate_limit_bucket"

    key: Mapped[str] = mapped_column(String(160), primary_key=True)
    # Not indexed: an update of an indexed column cannot be a heap-only (HOT) update, and
    # every request updates it; pruning scans a table of the active keys only.
    tat: Mapped[int] = mapped_column(BigInteger)
    emission: Mapped[int] = mapped_column(BigInteger)
    capacity: Mapped[int] = mapped_column(BigInteger)
    allowed: Mapped[bool] = mapped_column(Boolean)


class SecondFactor(Model):
    """A local account's TOTP second factor (RFC 6238); in force once ``confirmed_utc`` is set.

    The secret must be readable to check codes, so it is kept sealed (``labapp.sealing``:
    the base32 secret given to the authenticator app, encrypted under ``SECRET_KEY``);
    ``last_step`` is the time step of the last accepted code, so that no code is accepted
    twice (replay).
    """

    __tablename__ = "second_factor"

    user_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("app_user.id", ondelete="CASCADE"), primary_key=True)
    secret: Mapped[str] = mapped_column(String(200))
    created_utc: Mapped[datetime] = mapped_column(UtcDateTime)
    confirmed_utc: Mapped[datetime | None] = mapped_column(UtcDateTime)
    last_step: Mapped[int | None] = mapped_column(BigInteger)


class RecoveryCode(Model):
    """A one-time recovery code of a second factor, kept as the SHA-256 of its value."""

    __tablename__ = "recovery_code"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    user_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("second_factor.user_id", ondelete="CASCADE"), index=True)
    code_hash: Mapped[str] = mapped_column(String(64))
    used_utc: Mapped[datetime | None] = mapped_column(UtcDateTime)


class SignInEvent(Model):
    """One sign-in attempt, successful or not (never the password or code tried).

    ``user_id`` is the account the attempt resolved to, when any; no foreign key, so the
    record outlives whatever happens to the account. ``method`` (``password``, ``totp``,
    ``recovery_code``, ``ldap``, ``oidc``) and ``provider`` are plain strings.
    """

    __tablename__ = "sign_in_event"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at_utc: Mapped[datetime] = mapped_column(UtcDateTime, index=True)
    username: Mapped[str] = mapped_column(String(255))
    user_id: Mapped[str | None] = mapped_column(String(64), index=True)
    method: Mapped[str] = mapped_column(String(40))
    provider: Mapped[str | None] = mapped_column(String(80))
    address: Mapped[str] = mapped_column(String(64))
    succeeded: Mapped[bool] = mapped_column(Boolean)
    reason: Mapped[str | None] = mapped_column(String(80))
