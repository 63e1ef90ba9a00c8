"""JSON on the wire: UTC timestamps as ISO 8601 with ``Z`` and milliseconds, dates as ISO."""
from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from flask.json.provider import DefaultJSONProvider


def format_utc(value: datetime) -> str:
    """``2026-03-01T12:00:00.123Z`` for an aware (or naive UTC) datetime."""
    if value.tzinfo is not None:
        value = value.astimezone(UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


class LabJSONProvider(DefaultJSONProvider):
    """Flask's JSON provider with the wire format of decisions §1."""

    sort_keys = False

    @staticmethod
    def default(value: Any) -> Any:
        if isinstance(value, datetime):
            return format_utc(value)
        if isinstance(value, date):
            return value.isoformat()
        return DefaultJSONProvider.default(value)
