"""marshmallow fields with the wire formats of decisions §1."""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from marshmallow import ValidationError, fields

from labapp.jsonprovider import format_utc


class UtcDateTime(fields.AwareDateTime):
    """A timestamp: loads ISO 8601 with an offset (converted to UTC), dumps ``...123Z``."""

    def _serialize(self, value: datetime | None, attr: Any, obj: Any, **kwargs: Any) -> str | None:
        return None if value is None else format_utc(value)

    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> datetime:
        parsed = super()._deserialize(value, attr, data, **kwargs)
        try:
            return parsed.astimezone(UTC)
        except OverflowError:
            raise ValidationError("Out of range once converted to UTC.") from None
