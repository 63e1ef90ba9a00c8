"""Webhook secrets: made, kept encrypted, and used to sign per Standard Webhooks.

A secret is ``whsec_`` followed by the base64 of 32 random bytes (the form Standard Webhooks
libraries take). The database keeps it sealed with AES-GCM under a key derived (HKDF-SHA256)
from the application's ``SECRET_KEY``: a copy of the database alone does not give anyone the
power to sign as labapp. Changing ``SECRET_KEY`` makes every sealed secret unreadable: the
owners rotate them (docs/decisions/webhooks.md).
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

PREFIX = "whsec_"
_SEALED = "v1:"
_INFO = b"labapp webhook secrets v1"


class SecretUnreadable(Exception):
    """A sealed secret does not open with this application's key (``SECRET_KEY`` changed)."""


def new_secret() -> str:
    """A fresh secret, ``whsec_`` + base64 of 32 random bytes."""
    return PREFIX + base64.b64encode(os.urandom(32)).decode()


def _key(secret_key: str) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None,
                info=_INFO).derive(secret_key.encode())


def seal(secret: str, secret_key: str) -> str:
    """``secret`` encrypted under ``secret_key`` (a fresh nonce each time)."""
    nonce = os.urandom(12)
    sealed = AESGCM(_key(secret_key)).encrypt(nonce, secret.encode(), None)
    return _SEALED + base64.b64encode(nonce + sealed).decode()


def unseal(sealed: str, secret_key: str) -> str:
    """The secret :func:`seal` encrypted; SecretUnreadable when the key is another."""
    if not sealed.startswith(_SEALED):
        raise SecretUnreadable("not a sealed secret")
    raw = base64.b64decode(sealed[len(_SEALED):])
    try:
        return AESGCM(_key(secret_key)).decrypt(raw[:12], raw[12:], None).decode()
    except InvalidTag:
        raise SecretUnreadable("the secret was sealed under another SECRET_KEY") from None


def signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` header: ``v1,`` + base64 HMAC-SHA256 over
    ``{id}.{timestamp}.{body}`` keyed by the secret's bytes."""
    key = base64.b64decode(secret.removeprefix(PREFIX))
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()
