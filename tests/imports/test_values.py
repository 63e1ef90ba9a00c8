"""Cells to values: numbers written either way, units, dates, statuses, truth values."""
from __future__ import annotations

from datetime import date, datetime

import pytest

from labapp.imports.values import (
    AmbiguousDate,
    CellProblem,
    convert,
    date_evidence,
    parse_bool,
    parse_choice,
    parse_date,
    parse_int,
    parse_number,
)


@pytest.mark.parametrize("cell, expected", [
    ("1,5", (1.5, None)), ("1.5", (1.5, None)), ("-0,25", (-0.25, None)),
    ("1 234,5", (1234.5, None)), ("1.234,5", (1234.5, None)), ("1,234.5", (1234.5, None)),
    ("1\u00a0234\u00a0567", (1234567.0, None)), ("1.234.567", (1234567.0, None)),
    ("1,234,567", (1234567.0, None)), ("0,125", (0.125, None)), (".5", (0.5, None)),
    ("2.5e-3", (0.0025, None)), ("5 mL", (5.0, "mL")), ("12,5µL", (12.5, "µL")),
    (7, (7.0, None)), (2.5, (2.5, None)),
])
def test_numbers_with_decimal_comma_or_point(cell, expected) -> None:
    assert parse_number(cell) == expected


@pytest.mark.parametrize("cell, words", [
    ("1,234", "ambiguous"), ("12,34,5", "not a number"), ("1.23,4.5", "not a number"),
    ("abc", "not a number"), (True, "truth value"), ("", "expected a number"),
])
def test_bad_or_ambiguous_numbers(cell, words: str) -> None:
    with pytest.raises(CellProblem, match=words):
        parse_number(cell)


@pytest.mark.parametrize("value, unit, target, expected", [
    (1.5, "mL", "µL", 1500.0), (250, "uL", "mL", 0.25), (2, "L", "nL", 2e9),
    (1, "μl", "µL", 1), (3, "g", "mg", 3000.0), (500, "µg", "mg", 0.5), (1, "mM", "µM", 1000.0),
])
def test_units_convert(value, unit, target, expected) -> None:
    assert convert(value, unit, target) == pytest.approx(expected)


def test_units_of_different_kinds_do_not_convert() -> None:
    with pytest.raises(CellProblem, match="a volume is not a mass"):
        convert(1, "mL", "mg")
    with pytest.raises(CellProblem, match="unknown unit 'cups'"):
        convert(1, "cups", "mL")


@pytest.mark.parametrize("cell, order, expected", [
    ("2025-04-03", None, "2025-04-03"), ("2025/4/3", None, "2025-04-03"),
    ("13/04/2025", None, "2025-04-13"), ("04/13/2025", None, "2025-04-13"),
    ("24.12.2025", None, "2025-12-24"), ("3.4.2025", None, "2025-04-03"),
    ("03/04/2025", "dmy", "2025-04-03"), ("03/04/2025", "mdy", "2025-03-04"),
    ("03/03/25", None, "2025-03-03"), ("3 Apr 2025", None, "2025-04-03"),
    ("Apr 3, 2025", None, "2025-04-03"), ("03-Apr-2025", None, "2025-04-03"),
    (datetime(2025, 4, 3, 0, 0), None, "2025-04-03"), (date(2025, 4, 3), None, "2025-04-03"),
    ("2025-04-03T10:00:00Z", None, "2025-04-03"),
])
def test_dates(cell, order, expected: str) -> None:
    assert parse_date(cell, order) == expected


def test_an_ambiguous_date_is_a_problem_not_a_guess() -> None:
    with pytest.raises(AmbiguousDate, match="ambiguous: day 3 of month 4 or day 4 of month 3"):
        parse_date("03/04/2025")


@pytest.mark.parametrize("cell, words", [("31/31/2025", "not a date"),
                                         ("2025-02-30", "not a date"), ("soon", "not a date")])
def test_bad_dates(cell: str, words: str) -> None:
    with pytest.raises(CellProblem, match=words):
        parse_date(cell)


def test_date_evidence() -> None:
    assert date_evidence("13/04/2025") == "dmy"
    assert date_evidence("04/13/2025") == "mdy"
    assert date_evidence("03.04.2025") == "dmy"
    assert date_evidence("03/04/2025") is None
    assert date_evidence("2025-04-03") is None


def test_choices_by_name_in_any_case() -> None:
    statuses = ("Initial", "InProgress", "Completed")
    assert parse_choice("in progress", statuses, "status") == "InProgress"
    with pytest.raises(CellProblem, match="'Lost' is not a status"):
        parse_choice("Lost", statuses, "status")


def test_whole_numbers_and_truth_values() -> None:
    assert parse_int("12") == 12 and parse_int(8.0) == 8
    with pytest.raises(CellProblem, match="not a whole number"):
        parse_int("1,5")
    assert parse_bool("Yes") is True and parse_bool("no") is False and parse_bool(True)
    with pytest.raises(CellProblem, match="not yes or no"):
        parse_bool("maybe")
