"""The settings webhooks run by, read once per use from the application."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from flask import current_app

from labapp.sealing import current_keys
from labapp.webhooks.addresses import Network


@dataclass(frozen=True)
class WebhookSettings:
    """``WEBHOOK_*`` (README, labapp/config.py) and the keys secrets are sealed with: the
    first (``SECRET_KEY``) seals, any opens (its ``SECRET_KEY_FALLBACKS`` after it)."""

    timeout: float
    retry_first: timedelta
    retry_max: timedelta
    disable_after: timedelta
    allowed: Sequence[Network]
    secret_keys: tuple[str, ...]
    secret_overlap: timedelta

    @classmethod
    def of(cls, settings: dict[str, Any], secret_keys: Sequence[str]) -> WebhookSettings:
        return cls(timeout=float(settings["WEBHOOK_TIMEOUT_SECONDS"]),
                   retry_first=timedelta(seconds=settings["WEBHOOK_RETRY_FIRST_SECONDS"]),
                   retry_max=timedelta(seconds=settings["WEBHOOK_RETRY_MAX_SECONDS"]),
                   disable_after=timedelta(days=settings["WEBHOOK_DISABLE_AFTER_DAYS"]),
                   allowed=tuple(settings["WEBHOOK_ALLOWED_NETWORKS"] or ()),
                   secret_keys=tuple(secret_keys),
                   secret_overlap=timedelta(hours=settings["WEBHOOK_SECRET_OVERLAP_HOURS"]))

    @classmethod
    def current(cls) -> WebhookSettings:
        """The current application's."""
        return cls.of(current_app.config["LABAPP"], current_keys())

    @property
    def sealing_key(self) -> str:
        """The key new secrets are sealed with (``SECRET_KEY``)."""
        return self.secret_keys[0]

    def backoff(self, failures: int) -> timedelta:
        """The wait after the ``failures``-th failed attempt in a row: the first wait,
        doubled each time, at most the longest."""
        if failures <= 0:
            return timedelta(0)
        doubled: timedelta = self.retry_first * 2 ** min(failures - 1, 30)
        return min(doubled, self.retry_max)
