"""Dates relative to today, computed when a test uses them (a module constant made at import
would be yesterday's for the tests that run after midnight)."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta


def days_from_today(days: int) -> str:
    """The ISO date ``days`` after today in UTC (before it when negative)."""
    return (datetime.now(UTC).date() + timedelta(days=days)).isoformat()
