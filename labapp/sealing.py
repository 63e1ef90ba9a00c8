"""Secrets the application must read back (webhook signing secrets, TOTP secrets), kept in
the database sealed: AES-GCM under a key derived (HKDF-SHA256) from ``SECRET_KEY`` and a
purpose, so a copy of the database alone opens none of them, and a value sealed for one
purpose never opens as another's.

A value is sealed under the current ``SECRET_KEY`` and opened with it or with any of
``SECRET_KEY_FALLBACKS`` (the keys it replaced), so a key can be rotated without making what
the old one sealed unreadable; ``flask init`` seals again under the current key what only a
fallback opens, after which the old key may leave the list (docs/decisions/sealed-secrets.md).
"""
from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Iterable, Sequence

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from flask import current_app

SEALED_PREFIX = "v1:"
_NONCE_BYTES = 12
_TAG_BYTES = 16  # AES-GCM's authentication tag, after the ciphertext


class Unreadable(Exception):
    """A sealed value opens with none of the keys given (``SECRET_KEY`` changed without the
    old key among its fallbacks), or is no sealed value at all."""


def current_keys() -> tuple[str, ...]:
    """The current application's keys: ``SECRET_KEY``, which seals, then its
    ``SECRET_KEY_FALLBACKS``, which only open."""
    config = current_app.config
    return (str(config["SECRET_KEY"]), *map(str, config.get("SECRET_KEY_FALLBACKS") or ()))


def _key(secret_key: str, purpose: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None,
                info=purpose).derive(secret_key.encode())


def is_sealed(value: str) -> bool:
    """Whether ``value`` has the form :func:`seal` gives (not whether it opens)."""
    return value.startswith(SEALED_PREFIX)


def seal(value: str, secret_key: str, purpose: bytes) -> str:
    """``value`` encrypted under ``secret_key`` for ``purpose`` (a fresh nonce each time)."""
    nonce = os.urandom(_NONCE_BYTES)
    sealed = AESGCM(_key(secret_key, purpose)).encrypt(nonce, value.encode(), None)
    return SEALED_PREFIX + base64.b64encode(nonce + sealed).decode()


def unseal(sealed: str, secret_keys: Iterable[str], purpose: bytes) -> str:
    """The value :func:`seal` encrypted for ``purpose`` under one of ``secret_keys`` (tried
    in order); :class:`Unreadable` when none opens it."""
    if isinstance(secret_keys, str):
        raise TypeError("secret_keys is a collection of keys, not one key")
    if not is_sealed(sealed):
        raise Unreadable("not a sealed value")
    try:
        raw = base64.b64decode(sealed[len(SEALED_PREFIX):], validate=True)
    except binascii.Error:
        raise Unreadable("not a sealed value") from None
    if len(raw) < _NONCE_BYTES + _TAG_BYTES:
        raise Unreadable("not a sealed value")
    for secret_key in secret_keys:
        try:
            return AESGCM(_key(secret_key, purpose)).decrypt(
                raw[:_NONCE_BYTES], raw[_NONCE_BYTES:], None).decode()
        except InvalidTag:
            continue
    raise Unreadable("sealed under a key that is neither SECRET_KEY nor one of "
                     "SECRET_KEY_FALLBACKS")


def sealed_anew(stored: str, secret_keys: Sequence[str], purpose: bytes) -> str | None:
    """What ``stored`` should become so that ``SECRET_KEY`` (the first of ``secret_keys``)
    alone opens it, or None when it needs nothing (or opens with no key): a value in clear
    is sealed, one that opens only with a fallback is sealed again."""
    if not is_sealed(stored):
        return seal(stored, secret_keys[0], purpose)
    try:
        unseal(stored, secret_keys[:1], purpose)
        return None
    except Unreadable:
        pass
    try:
        return seal(unseal(stored, secret_keys[1:], purpose), secret_keys[0], purpose)
    except Unreadable:
        return None
