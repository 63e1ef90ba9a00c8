"""Webhook secrets: made, kept sealed, and used to sign per Standard Webhooks.

A secret is ``whsec_`` followed by the base64 of 32 random bytes (the form Standard Webhooks
libraries take). The database keeps it sealed (:mod:`labapp.sealing`, under ``SECRET_KEY``
for this purpose): a copy of the database alone does not give anyone the power to sign as
labapp. A ``SECRET_KEY`` changed without the old one among ``SECRET_KEY_FALLBACKS`` makes
every sealed secret unreadable: the owners rotate them (docs/decisions/webhooks.md).
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import os
from collections.abc import Iterable, Sequence

from labapp import sealing

PREFIX = "whsec_"
PURPOSE = b"labapp webhook secrets v1"


def new_secret() -> str:
    """A fresh secret, ``whsec_`` + base64 of 32 random bytes."""
    return PREFIX + base64.b64encode(os.urandom(32)).decode()


def seal(secret: str, secret_key: str) -> str:
    """``secret`` sealed under ``secret_key`` (a fresh nonce each time)."""
    return sealing.seal(secret, secret_key, PURPOSE)


def unseal(sealed: str, secret_keys: Iterable[str]) -> str:
    """The secret :func:`seal` sealed under one of ``secret_keys``;
    :class:`labapp.sealing.Unreadable` when none opens it."""
    return sealing.unseal(sealed, secret_keys, PURPOSE)


def sealed_anew(sealed: str, secret_keys: Sequence[str]) -> str | None:
    """``sealed`` sealed again under the first of ``secret_keys`` when only a later one (a
    fallback) opens it; None when it needs nothing or opens with none."""
    return sealing.sealed_anew(sealed, secret_keys, PURPOSE)


def signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` header: ``v1,`` + base64 HMAC-SHA256 over
    ``{id}.{timestamp}.{body}`` keyed by the secret's bytes."""
    key = base64.b64decode(secret.removeprefix(PREFIX))
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()
