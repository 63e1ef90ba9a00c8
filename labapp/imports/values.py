"""Spreadsheet cells as field values: numbers written either way, units, dates, statuses.

Every parser takes a cell as the file gives it (text from CSV; text, number, date or
boolean from XLSX) and returns the value in its API form (a date as ISO text), or raises
:class:`CellProblem` with a message for the row's error column. Nothing here guesses: a
number whose separator could be a thousands or a decimal one, or a date whose day and month
could be swapped, is a problem unless the caller says how the file writes them.
"""
from __future__ import annotations

import re
from datetime import date, datetime
from typing import Any, Literal

DateOrder = Literal["dmy", "mdy"]


class CellProblem(ValueError):
    """A cell that does not give a value of its field; the message says why."""


class AmbiguousDate(CellProblem):
    """A date whose day and month could be swapped (``03/04/2025``)."""


def text_of(cell: Any) -> str | None:
    """A cell as text, stripped; None for an empty cell."""
    if cell is None:
        return None
    if isinstance(cell, float) and cell.is_integer():
        cell = int(cell)
    if isinstance(cell, datetime) and cell.time() == datetime.min.time():
        cell = cell.date()
    if isinstance(cell, date):
        return cell.isoformat()
    text = str(cell).strip()
    return text or None


# --- numbers ---------------------------------------------------------------------------

_SPACES = re.compile(r"[\s\u00a0\u202f\u2009']")
_NUMBER_AND_UNIT = re.compile(
    r"^(?P<number>[+-]?(?:\d[\d.,'\u00a0\u202f\u2009 ]*)?\d(?:[eE][+-]?\d+)?|[+-]?[.,]\d+)"
    r"\s*(?P<unit>[^\d\s].*)?$")
_GROUPED = re.compile(r"^\d{1,3}(?:X\d{3})+$")


def _grouped(digits: str, separator: str) -> bool:
    return _GROUPED.match(digits.replace(separator, "X")) is not None


def _plain(number: str) -> str:
    """A number with one or both of ``,`` and ``.`` rewritten with a decimal point; raises
    when a lone separator could be either."""
    sign = number[0] if number[0] in "+-" else ""
    body = number[len(sign):]
    mantissa, exponent = re.match(r"^([^eE]*)(.*)$", body).groups()  # type: ignore[union-attr]
    commas, points = mantissa.count(","), mantissa.count(".")
    if commas and points:
        decimal = "," if mantissa.rfind(",") > mantissa.rfind(".") else "."
        thousands = "." if decimal == "," else ","
        whole, _, fraction = mantissa.rpartition(decimal)
        if not _grouped(whole, thousands) or decimal in whole:
            raise CellProblem(f"{number!r} is not a number")
        mantissa = whole.replace(thousands, "") + "." + fraction
    elif commas > 1 or points > 1:
        separator = "," if commas else "."
        if not _grouped(mantissa, separator):
            raise CellProblem(f"{number!r} is not a number")
        mantissa = mantissa.replace(separator, "")
    elif commas == 1:
        whole, _, fraction = mantissa.partition(",")
        if len(fraction) == 3 and whole not in ("", "0") and not exponent:
            raise CellProblem(f"{number!r} is ambiguous: write {whole}{fraction} without the "
                              f"comma, or {whole}.{fraction} with a decimal point")
        mantissa = f"{whole}.{fraction}"
    return sign + mantissa + exponent


def parse_number(cell: Any) -> tuple[float, str | None]:
    """``(number, unit written after it)``: ``1,5`` = ``1.5``, ``1 234,5`` = ``1.234,5`` =
    ``1,234.5`` = 1234.5, ``5 mL`` = (5, ``mL``)."""
    if isinstance(cell, bool):
        raise CellProblem("expected a number, not a truth value")
    if isinstance(cell, int | float):
        return float(cell), None
    text = text_of(cell)
    if text is None:
        raise CellProblem("expected a number")
    match = _NUMBER_AND_UNIT.match(text)
    if match is None:
        raise CellProblem(f"{text!r} is not a number")
    plain = _plain(_SPACES.sub("", match["number"]))
    try:
        value = float(plain)
    except ValueError:
        raise CellProblem(f"{text!r} is not a number") from None
    unit = match["unit"].strip() if match["unit"] else None
    return value, unit


# --- units -----------------------------------------------------------------------------

_MICRO = "\u00b5"
# Factor to the base unit of each dimension, by the unit's key (see unit_key).
_FACTORS: dict[str, tuple[str, float]] = {
    "l": ("volume", 1.0), "dl": ("volume", 1e-1), "cl": ("volume", 1e-2),
    "ml": ("volume", 1e-3), "µl": ("volume", 1e-6), "nl": ("volume", 1e-9),
    "kg": ("mass", 1e3), "g": ("mass", 1.0), "mg": ("mass", 1e-3), "µg": ("mass", 1e-6),
    "ng": ("mass", 1e-9), "pg": ("mass", 1e-12),
    "m": ("molar", 1.0), "mm": ("molar", 1e-3), "µm": ("molar", 1e-6), "nm": ("molar", 1e-9),
    "mol/l": ("molar", 1.0), "mmol/l": ("molar", 1e-3), "µmol/l": ("molar", 1e-6),
    "g/l": ("mass/volume", 1.0), "mg/ml": ("mass/volume", 1.0), "µg/µl": ("mass/volume", 1.0),
    "mg/l": ("mass/volume", 1e-3), "µg/ml": ("mass/volume", 1e-3),
    "ng/µl": ("mass/volume", 1e-3), "ng/ml": ("mass/volume", 1e-6),
    "mol": ("amount", 1.0), "mmol": ("amount", 1e-3), "µmol": ("amount", 1e-6),
    "nmol": ("amount", 1e-9),
}


def unit_key(unit: str) -> str:
    """A unit as conversions compare it: case ignored (no unit here is told from another by
    case alone), ``u`` and the Greek mu read as the micro sign."""
    key = unit.strip().replace("\u03bc", _MICRO)
    return re.sub(r"(?<![A-Za-z])u(?=[A-Za-z])", _MICRO, key).lower()


def convert(value: float, unit: str, target: str) -> float:
    """``value`` in ``unit`` expressed in ``target``; raises when one of them is unknown or
    they measure different things (mL into mg)."""
    if unit_key(unit) == unit_key(target):
        return value
    source, wanted = _FACTORS.get(unit_key(unit)), _FACTORS.get(unit_key(target))
    if source is None or wanted is None:
        unknown = unit if source is None else target
        raise CellProblem(f"cannot convert {unit} into {target}: unknown unit {unknown!r}")
    if source[0] != wanted[0]:
        raise CellProblem(f"cannot convert {unit} into {target}: a {source[0]} is not a "
                          f"{wanted[0]}")
    return round(value * source[1] / wanted[1], 12)


# --- dates -----------------------------------------------------------------------------

_ISO = re.compile(r"^(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?"
                  r"(?:Z|[+-]\d{2}:?\d{2})?)?$")
_NUMERIC = re.compile(r"^(\d{1,2})([-/.])(\d{1,2})\2(\d{4}|\d{2})$")
_MONTHS = {name: number for number, names in enumerate((
    ("jan", "january", "janv", "januar"), ("feb", "february", "fév", "fev", "februar"),
    ("mar", "march", "mär", "märz", "mars"), ("apr", "april", "avr"),
    ("may", "mai"), ("jun", "june", "juin", "juni"), ("jul", "july", "juil", "juli"),
    ("aug", "august", "aoû", "aout"), ("sep", "sept", "september"),
    ("oct", "october", "okt", "oktober"), ("nov", "november"),
    ("dec", "december", "déc", "dez", "dezember")), start=1) for name in names}
_DAY_MONTH = re.compile(r"^(\d{1,2})[\s.\-/]+([^\W\d_]+)\.?[\s.\-/,]+(\d{4})$")
_MONTH_DAY = re.compile(r"^([^\W\d_]+)\.?\s+(\d{1,2}),?\s+(\d{4})$")


def date_evidence(cell: Any) -> DateOrder | None:
    """What one cell says about the order of day and month in its column: ``dmy`` when its
    first number is above 12 or it is written with dots (``24.12.2025``), ``mdy`` when the
    second is above 12, else None."""
    text = text_of(cell) if isinstance(cell, str) else None
    match = _NUMERIC.match(text) if text else None
    if match is None:
        return None
    first, separator, second = int(match[1]), match[2], int(match[3])
    if first > 12 or (separator == "." and second <= 12):
        return "dmy"
    if second > 12:
        return "mdy"
    return None


def _date(year: int, month: int, day: int, text: str) -> date:
    try:
        return date(year, month, day)
    except ValueError:
        raise CellProblem(f"{text!r} is not a date") from None


def _year(digits: str) -> int:
    year = int(digits)
    return year + 2000 if len(digits) == 2 else year


def parse_date(cell: Any, order: DateOrder | None = None) -> str:
    """A date cell as ISO text. Numeric day/month forms follow ``order`` (the column's, see
    :func:`date_evidence`); without it a form whose day and month could be swapped raises
    :class:`AmbiguousDate`."""
    if isinstance(cell, datetime):
        return cell.date().isoformat()
    if isinstance(cell, date):
        return cell.isoformat()
    text = text_of(cell)
    if text is None:
        raise CellProblem("expected a date")
    if (match := _ISO.match(text)) is not None:
        return _date(int(match[1]), int(match[2]), int(match[3]), text).isoformat()
    if (match := _NUMERIC.match(text)) is not None:
        first, second, year = int(match[1]), int(match[3]), _year(match[4])
        if first == second:
            return _date(year, first, first, text).isoformat()
        evidence = date_evidence(text) or order
        if evidence is None:
            raise AmbiguousDate(f"{text!r} is ambiguous: day {first} of month {second} or day "
                                f"{second} of month {first}? Write it as YYYY-MM-DD")
        day, month = (first, second) if evidence == "dmy" else (second, first)
        return _date(year, month, day, text).isoformat()
    for pattern, day_at, month_at in ((_DAY_MONTH, 1, 2), (_MONTH_DAY, 2, 1)):
        match = pattern.match(text)
        if match is not None and match[month_at].lower() in _MONTHS:
            return _date(int(match[3]), _MONTHS[match[month_at].lower()], int(match[day_at]),
                         text).isoformat()
    raise CellProblem(f"{text!r} is not a date (write it as YYYY-MM-DD)")


def parse_datetime(cell: Any) -> str:
    """A timestamp cell as ISO text; a spreadsheet time without a zone is taken as UTC."""
    if isinstance(cell, datetime):
        return cell.isoformat() if cell.tzinfo is not None else cell.isoformat() + "Z"
    text = text_of(cell)
    if text is None:
        raise CellProblem("expected a timestamp")
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise CellProblem(f"{text!r} is not a timestamp such as 2026-03-01T12:00:00Z") from None
    return parsed.isoformat() if parsed.tzinfo is not None else parsed.isoformat() + "Z"


# --- other kinds -----------------------------------------------------------------------

_TRUE = frozenset({"true", "yes", "y", "1", "x", "ja", "oui", "wahr", "vrai"})
_FALSE = frozenset({"false", "no", "n", "0", "nein", "non", "falsch", "faux"})


def parse_bool(cell: Any) -> bool:
    if isinstance(cell, bool):
        return cell
    text = (text_of(cell) or "").casefold()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise CellProblem(f"{text!r} is not yes or no")


def parse_int(cell: Any) -> int:
    value, unit = parse_number(cell)
    if unit is not None or not value.is_integer():
        raise CellProblem(f"{text_of(cell)!r} is not a whole number")
    return int(value)


def parse_choice(cell: Any, choices: tuple[str, ...], what: str) -> str:
    """One of ``choices`` named in any case (a status, a location type)."""
    text = text_of(cell) or ""
    by_key = {normal_word(choice): choice for choice in choices}
    found = by_key.get(normal_word(text))
    if found is None:
        raise CellProblem(f"{text!r} is not a {what} (one of {', '.join(choices)})")
    return found


def normal_word(text: str) -> str:
    """A word as choices compare it: case, spaces, hyphens and underscores ignored."""
    return re.sub(r"[\s_\-]+", "", text).casefold()
