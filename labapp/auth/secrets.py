"""Random token values, their stored hashes, and password hashing (Argon2id, memory-hard)."""
from __future__ import annotations

import functools
import hashlib
import hmac
import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

MIN_PASSWORD_LENGTH = 10
PAT_PREFIX = "PAT"

# Argon2id with the library's (RFC 9106 low-memory) defaults. The test suite substitutes a
# cheaper instance; a test checks these production parameters.
hasher = PasswordHasher()


@functools.lru_cache(maxsize=2)
def _dummy_hash(of: PasswordHasher) -> str:
    """What a password is verified against when the username is unknown, so the answer
    takes as long either way: a hash at the cost of ``of``, the hasher in use. Made at the
    first use, not at import, where it was 0.3 s of the start of every process (each CLI
    command, each gunicorn worker)."""
    return of.hash(secrets.token_urlsafe(16))


def new_token() -> str:
    """A random URL-safe token with 256 bits of entropy."""
    return secrets.token_urlsafe(32)


def new_pat_value() -> str:
    """A personal access token: ``PAT`` followed by 40 random URL-safe characters."""
    return PAT_PREFIX + secrets.token_urlsafe(30)


def token_hash(value: str) -> str:
    """The SHA-256 hex digest under which a token is stored."""
    return hashlib.sha256(value.encode()).hexdigest()


def same(a: str, b: str) -> bool:
    """Constant-time string comparison."""
    return hmac.compare_digest(a.encode(), b.encode())


def hash_password(password: str) -> str:
    return hasher.hash(password)


def verify_password(stored_hash: str | None, password: str) -> bool:
    """True when ``password`` matches; an absent hash still costs one verification."""
    try:
        return (hasher.verify(stored_hash or _dummy_hash(hasher), password)
                and stored_hash is not None)
    except (VerificationError, InvalidHashError):
        return False


def needs_rehash(stored_hash: str) -> bool:
    return hasher.check_needs_rehash(stored_hash)


def password_problem(password: str) -> str | None:
    """Why ``password`` is not acceptable as a new password, or None."""
    if len(password) < MIN_PASSWORD_LENGTH:
        return f"must be at least {MIN_PASSWORD_LENGTH} characters long"
    if not password.strip():
        return "must not be blank"
    return None
