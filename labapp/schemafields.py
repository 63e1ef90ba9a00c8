"""marshmallow fields with the wire formats of decisions §1, and the base of write bodies."""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from marshmallow import Schema, ValidationError, fields, pre_load

from labapp.jsonprovider import format_utc


class UtcTimestamp(fields.AwareDateTime):
    """A timestamp: loads ISO 8601 with an offset (converted to UTC), dumps ``...123Z``."""

    def _serialize(self, value: datetime | None, attr: Any, obj: Any, **kwargs: Any) -> str | None:
        return None if value is None else format_utc(value)

    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> datetime:
        parsed = super()._deserialize(value, attr, data, **kwargs)
        try:
            return parsed.astimezone(UTC)
        except OverflowError:
            raise ValidationError("Out of range once converted to UTC.") from None


class WriteBackSchema(Schema):
    """A write body that accepts the resource as a ``GET`` answered it (decisions §4).

    Its ``dump_only`` fields name what the server computes or maintains: the OpenAPI document
    shows them as read-only, and when a client sends them back they are dropped before
    loading. Any other unknown key is still rejected.
    """

    @pre_load
    def _ignore_read_only(self, data: Any, **_kwargs: Any) -> Any:
        if not isinstance(data, dict):
            return data
        read_only = {field.data_key or name for name, field in self.fields.items()
                     if field.dump_only}
        return {key: value for key, value in data.items() if key not in read_only}
