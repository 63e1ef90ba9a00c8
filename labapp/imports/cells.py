"""One cell into the API value of its field, by the field's type (the parsers of
:mod:`labapp.imports.values`), and the checks of the entity API on the result.

References are not resolved here: a reference cell comes back as the text that names its
target (:class:`Named`), resolved in bulk by :mod:`labapp.imports.rows`.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from labapp.entities.values import FieldValueError, coerce
from labapp.imports.values import (
    CellProblem,
    DateOrder,
    parse_bool,
    parse_choice,
    parse_date,
    parse_datetime,
    parse_int,
    parse_number,
    text_of,
)
from labapp.model.registry import ClassSpec, FieldSpec


@dataclass(frozen=True, slots=True)
class Named:
    """A reference cell: the id, barcode, name (or location path) of its target."""

    key: str


@dataclass(frozen=True, slots=True)
class Measured:
    """A number cell with the unit it was written in (in the cell, else the header) and the
    unit its column's header names (``Volume (mL)``), if any."""

    value: float
    unit: str
    column_unit: str | None = None


def attribute_value(cell: Any) -> Any:
    """A cell as an attribute stores it: numbers as numbers, dates as ISO text, truth values
    as such, text stripped."""
    if isinstance(cell, bool) or (isinstance(cell, int) and not isinstance(cell, bool)):
        return cell
    if isinstance(cell, float):
        return int(cell) if cell.is_integer() else cell
    if isinstance(cell, datetime | date):
        return text_of(cell)
    return text_of(cell)


def cell_value(spec: ClassSpec, field: FieldSpec, cell: Any, header_unit: str | None,
               order: DateOrder | None) -> Any:
    """The value of a non-empty cell for ``field``: API form, :class:`Named` for a reference,
    :class:`Measured` for a number with a unit. Raises :class:`CellProblem`."""
    if field.type == "ref":
        text = text_of(cell)
        return Named(text) if text is not None else None
    if field.name == "status":
        return parse_choice(cell, spec.workflow.statuses, f"status of {spec.name}")
    if field.choices:
        return parse_choice(cell, field.choices, f"{field.name} of {spec.name}")
    kind = field.type
    if kind in ("str", "text"):
        return text_of(cell)
    if kind == "float":
        number, unit = parse_number(cell)
        unit = unit or header_unit
        return Measured(number, unit, header_unit) if unit else number
    if kind == "int":
        return parse_int(cell)
    if kind == "bool":
        return parse_bool(cell)
    if kind == "date":
        return parse_date(cell, order)
    if kind == "datetime":
        return parse_datetime(cell)
    raise CellProblem(f"{field.name} cannot be imported from a spreadsheet")


def checked(field: FieldSpec, value: Any) -> Any:
    """``value`` (API form) as the entity API stores it; raises :class:`CellProblem` with the
    API's own message when the field refuses it (too long, below its minimum...)."""
    try:
        return coerce(field, value)
    except FieldValueError as error:
        raise CellProblem(str(error)) from None
