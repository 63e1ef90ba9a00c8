"""Successful Basic ``username:password`` verifications, remembered briefly in this process.

A script that authenticates with its password sends it on every request, and a full
Argon2id verification costs about as much as the rest of the request many times over. So a
worker remembers a success for ``BASIC_AUTH_CACHE_SECONDS``:

- the key is an HMAC-SHA256, under the application's secret key, of the username and the
  password; the value is the stored password hash the password was verified against and an
  expiry. Nothing in the memory turns back into a password, and only the right password
  finds an entry;
- the caller reads the user row on every request anyway and accepts an entry only while that
  hash is still the stored one and the user is active. A password change, an administrator's
  reset or a deactivation, made in any worker or on any host, ends the entry at once; the
  worker that makes such a change also drops the user's entries (:func:`forget`);
- failures are never remembered, and the caller checks login throttling before it looks here,
  so a throttled client cannot use the memory to test guesses.

Each worker has its own memory: the first request a worker sees from a script costs one
verification.
"""
from __future__ import annotations

import hashlib
import hmac
import threading
import time
from dataclasses import dataclass

from flask import current_app

_EXTENSION = "labapp.basic_cache"
# Enough for every script of a lab; when full, expired entries go first, then the oldest.
CAPACITY = 4096
# The clock entries expire by (monotonic: immune to changes of the wall clock).
clock = time.monotonic


@dataclass(frozen=True)
class _Entry:
    username: str
    password_hash: str
    expires: float


class VerifiedPasswords:
    """The memory of one application in one process; safe to share between threads."""

    def __init__(self, secret_key: str, lifetime: float) -> None:
        self._secret = secret_key.encode()
        self.lifetime = lifetime
        self._entries: dict[bytes, _Entry] = {}
        self._lock = threading.Lock()

    def _key(self, username: str, password: str) -> bytes:
        # Usernames hold no NUL (the Basic parser refuses one), so the joint is unambiguous.
        message = username.encode() + b"\x00" + password.encode()
        return hmac.new(self._secret, message, hashlib.sha256).digest()

    def recalls(self, username: str, password: str, stored_hash: str) -> bool:
        """Whether this password was verified against ``stored_hash`` within the lifetime."""
        key = self._key(username, password)
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return False
            if entry.expires <= clock() or not hmac.compare_digest(
                    entry.password_hash.encode(), stored_hash.encode()):
                del self._entries[key]
                return False
            return True

    def remember(self, username: str, password: str, password_hash: str) -> None:
        """Note that ``password`` matched ``password_hash`` just now."""
        if self.lifetime <= 0:
            return
        key = self._key(username, password)
        now = clock()
        with self._lock:
            if key not in self._entries and len(self._entries) >= CAPACITY:
                self._make_room(now)
            self._entries[key] = _Entry(username, password_hash, now + self.lifetime)

    def _make_room(self, now: float) -> None:
        for key in [key for key, entry in self._entries.items() if entry.expires <= now]:
            del self._entries[key]
        if len(self._entries) >= CAPACITY:
            del self._entries[next(iter(self._entries))]

    def forget(self, username: str) -> None:
        """Drop every entry of ``username``."""
        with self._lock:
            for key in [key for key, entry in self._entries.items()
                        if entry.username == username]:
                del self._entries[key]


def memory() -> VerifiedPasswords:
    """The memory of the current application in this process (created on first use)."""
    found = current_app.extensions.get(_EXTENSION)
    if found is None:
        found = current_app.extensions.setdefault(_EXTENSION, VerifiedPasswords(
            current_app.config["SECRET_KEY"],
            current_app.config["LABAPP"]["BASIC_AUTH_CACHE_SECONDS"]))
    if not isinstance(found, VerifiedPasswords):
        raise TypeError(f"app.extensions[{_EXTENSION!r}] is not a VerifiedPasswords")
    return found


def forget(username: str) -> None:
    """Drop the user's remembered verifications in this process (their password changed,
    was reset, or their logins were ended)."""
    found = current_app.extensions.get(_EXTENSION)
    if found is not None:
        found.forget(username)
