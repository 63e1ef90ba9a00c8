"""Durations of relative dates in ``$filter`` (decisions §7): ``duration'P14D'`` literals and
moving a date or datetime by them (``now() add duration'P14D'``)."""
from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta

from labapp.query.conditions import FilterError

_DURATION = re.compile(r"(-?)P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?")
_CALENDAR = re.compile(r"-?P[^T]*[YMW]")


def parse_duration(text: str, position: int) -> timedelta:
    """The duration of a ``duration'P1DT2H30M'`` token: days, hours, minutes and seconds, with
    an optional leading ``-``. Years, months and weeks are refused (a month has no fixed
    length); FilterError names the token's ``position``."""
    body = text[text.index("'") + 1:-1].upper()
    if _CALENDAR.match(body):
        raise FilterError(f"Duration '{body}' counts years, months or weeks; use days, hours, "
                          "minutes and seconds (a month has no fixed length): P30D, PT12H",
                          position)
    found = _DURATION.fullmatch(body)
    if found is None or not any(found.groups()[1:]) or body.endswith("T"):
        raise FilterError(f"Invalid duration '{body}': expected ISO 8601 days and time, as in "
                          "P14D, PT12H or P1DT2H30M", position)
    sign, days, hours, minutes, seconds = found.groups()
    try:
        delta = timedelta(days=int(days or 0), hours=int(hours or 0),
                          minutes=int(minutes or 0), seconds=float(seconds or 0))
    except OverflowError:
        raise FilterError(f"Duration '{body}' is out of range", position) from None
    return -delta if sign else delta


def shift(value: date, delta: timedelta, position: int) -> date:
    """``value`` moved by ``delta``: a date stays a date for whole days, else it becomes that
    date's midnight UTC moved by ``delta``. FilterError at ``position`` when out of range."""
    try:
        if isinstance(value, datetime) or delta % timedelta(days=1) == timedelta(0):
            return value + delta
        return datetime.combine(value, time(), UTC) + delta
    except OverflowError:
        raise FilterError("Date out of range", position) from None
