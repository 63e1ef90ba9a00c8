"""Turning JSON input values into stored values, by the registry type of the field."""
from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any, TypeVar

from labapp.model.registry import FieldSpec

_Number = TypeVar("_Number", int, float)


class FieldValueError(ValueError):
    """A value that does not fit its field; the message says what was expected."""


def _parse_datetime(value: str) -> datetime:
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        raise FieldValueError("expected a timestamp with a time zone, e.g. "
                              "2026-03-01T12:00:00Z")
    return parsed.astimezone(UTC)


def _coerce_str(spec: FieldSpec, value: Any) -> str:
    if not isinstance(value, str):
        raise FieldValueError("expected a string")
    if spec.max_length is not None and len(value) > spec.max_length:
        raise FieldValueError(f"longer than {spec.max_length} characters")
    if spec.choices and value not in spec.choices:
        raise FieldValueError(f"expected one of {', '.join(spec.choices)}")
    return value


def _coerce_int(spec: FieldSpec, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise FieldValueError("expected a whole number")
    if isinstance(value, float):
        if not value.is_integer():
            raise FieldValueError("expected a whole number")
        value = int(value)
    limit = spec.maximum or 2**63 - 1
    if abs(value) > limit:
        raise FieldValueError(f"out of range (at most {limit})")
    checked: int = _at_least(spec, value)
    return checked


def _coerce_float(spec: FieldSpec, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise FieldValueError("expected a number")
    result = float(value)
    if result != result or result in (float("inf"), float("-inf")):
        raise FieldValueError("expected a finite number")
    return _at_least(spec, result)


def _at_least(spec: FieldSpec, value: _Number) -> _Number:
    """``value`` when the field has no minimum or ``value`` reaches it."""
    if spec.minimum is not None and value < spec.minimum:
        minimum = int(spec.minimum) if float(spec.minimum).is_integer() else spec.minimum
        raise FieldValueError(f"must not be less than {minimum}")
    return value


def _coerce_bool(_spec: FieldSpec, value: Any) -> bool:
    if not isinstance(value, bool):
        raise FieldValueError("expected true or false")
    return value


def _coerce_date(_spec: FieldSpec, value: Any) -> date:
    if not isinstance(value, str):
        raise FieldValueError("expected a date such as 2026-03-01")
    try:
        if "T" in value:
            return _parse_datetime(value).date()
        return date.fromisoformat(value)
    except (ValueError, OverflowError):  # overflow: year 9999 moved past 9999 by its offset
        raise FieldValueError("expected a date such as 2026-03-01") from None


def _coerce_datetime(_spec: FieldSpec, value: Any) -> datetime:
    if not isinstance(value, str):
        raise FieldValueError("expected a timestamp such as 2026-03-01T12:00:00Z")
    try:
        return _parse_datetime(value)
    except FieldValueError:
        raise
    except (ValueError, OverflowError):
        raise FieldValueError("expected a timestamp such as 2026-03-01T12:00:00Z") from None


def _coerce_json(_spec: FieldSpec, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise FieldValueError("expected an object")
    return value


_COERCERS = {
    "str": _coerce_str, "text": _coerce_str, "ref": _coerce_str, "int": _coerce_int,
    "float": _coerce_float, "bool": _coerce_bool, "date": _coerce_date,
    "datetime": _coerce_datetime, "json": _coerce_json,
}


def coerce(spec: FieldSpec, value: Any) -> Any:
    """The stored form of ``value`` for ``spec``; None stays None when the field allows it.

    Raises :class:`FieldValueError` with a message for the client.
    """
    if value is None:
        if not spec.nullable:
            raise FieldValueError("must not be null")
        return None
    return _COERCERS[spec.type](spec, value)
