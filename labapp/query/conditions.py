"""Conditions on one field: the typing, escaping and null rules of the ``$filter`` dialect.

:mod:`labapp.query.filter` walks a parsed filter and asks :class:`ConditionBuilder` for each
comparison; :func:`compile_condition` builds the same conditions from structured input (the
dataset's ``filters``: field, op, value), so both paths type values, escape patterns and
treat missing values alike.

Semantics are two-valued, as in OData: a comparison with a missing (NULL) value is false and
its negation true, so ``ne`` and ``not_in`` also match rows where the value is missing.
"""
from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Float,
    String,
    and_,
    case,
    false,
    func,
    literal,
    or_,
    true,
)

from labapp.errors import InvalidInput
from labapp.query.fields import (
    ATTRIBUTE,
    TEXT_TYPES,
    FieldSource,
    UnknownField,
    attribute_text,
    resolve_field,
)
from labapp.query.textmatch import code_point_order, folded, like_pattern, prefix_bounds

MAX_VALUES = 10_000  # literals per filter: bound parameters (SQLite allows 32766 per query)
COMPARISONS = frozenset({"eq", "ne", "gt", "ge", "lt", "le"})
MATCHES = frozenset({"contains", "startswith", "endswith"})
MEMBERSHIP = frozenset({"in", "not_in"})
POSTFIX = frozenset({"isnull", "isnotnull", "isempty", "isnotempty"})
OPERATORS = COMPARISONS | MATCHES | MEMBERSHIP | POSTFIX
INT64 = 2 ** 63
_INT32 = 2 ** 31
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})?",
                       re.IGNORECASE)
# OData's day-time durations (xsd:dayTimeDuration): days, hours, minutes, seconds.
_OPERATORS = {"eq": operator.eq, "ne": operator.ne, "gt": operator.gt, "ge": operator.ge,
              "lt": operator.lt, "le": operator.le}
_INVERSE = {"eq": "ne", "gt": "le", "ge": "lt", "lt": "ge", "le": "gt"}
_PATTERNS = {"contains": "%{}%", "startswith": "{}%", "endswith": "%{}"}
# Per dialect: SQL naming the JSON type of ``attributes[key]`` and its names for numbers and
# booleans. SQLite's json_type needs the document and the path (``element.left/right``):
# of the extracted value it would call ``true`` an integer.
_JSON_TYPEOF: dict[str, tuple[Callable[[Any], ColumnElement[str]],
                              dict[str, tuple[str, ...]]]] = {
    "postgresql": (func.jsonb_typeof, {"number": ("number",), "bool": ("boolean",)}),
    "sqlite": (lambda element: func.json_type(element.left, element.right),
               {"number": ("integer", "real"), "bool": ("true", "false")}),
}


class FilterError(InvalidInput):
    """400 ``invalid_filter``: the filter is malformed or names something it may not.

    ``message`` is the reason without the position; ``detail`` adds the position.
    """

    code = "invalid_filter"
    title = "Invalid filter"

    def __init__(self, message: str, position: int) -> None:
        detail = f"{message} at position {position}"
        super().__init__(detail, errors=[{"field": "$filter", "message": detail}])
        self.message = message
        self.position = position


class ConditionError(InvalidInput):
    """400 ``invalid_filter`` of :func:`compile_condition`: the message names no position."""

    code = "invalid_filter"
    title = "Invalid filter"


@dataclass(frozen=True)
class Literal:
    """A value to compare with: ``kind`` is null, bool, number, string, date or datetime;
    ``text`` is how error messages show it. ``computed`` marks a date or time the filter
    computes (``now()``, ``date(...)``, ``add``/``sub``): a date field compares its date."""

    kind: str
    value: Any
    text: str
    position: int
    computed: bool = False


@dataclass(frozen=True)
class Operand:
    """A resolved field (or ``tolower``/``toupper`` of one) with its registry type."""

    name: str
    expression: ColumnElement[Any]
    type: str
    nullable: bool
    position: int


def parse_datetime(text: str) -> datetime:
    """An ISO datetime as aware UTC (naive text is taken as UTC)."""
    value = datetime.fromisoformat(text.upper())
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _attribute_value(lit: Literal) -> str:
    """A literal as the text an attribute holds (a computed date or time in ISO 8601)."""
    if lit.kind == "string":
        return str(lit.value)
    if not lit.computed:
        return lit.text
    if isinstance(lit.value, datetime):
        return lit.value.isoformat(timespec="seconds").replace("+00:00", "Z")
    return str(lit.value.isoformat())


def _temporal(lit: Literal) -> date | None:
    """A date or datetime literal, or a quoted one; None for other kinds."""
    if lit.kind in ("date", "datetime"):
        value: date = lit.value
        return value
    if lit.kind != "string":
        return None
    try:
        if _DATE.fullmatch(lit.value):
            return date.fromisoformat(lit.value)
        if _DATETIME.fullmatch(lit.value):
            return parse_datetime(lit.value)
    except (ValueError, OverflowError):
        pass
    raise FilterError(f"Invalid date or datetime {lit.text}", lit.position)


def _or_null(condition: ColumnElement[bool], expression: ColumnElement[Any],
             nullable: bool) -> ColumnElement[bool]:
    return or_(condition, expression.is_(None)) if nullable else condition


class ConditionBuilder:
    """The conditions of the dialect over one field source; ``negate`` asks for the negation
    (two-valued: a negated comparison also matches missing values)."""

    def __init__(self, source: FieldSource) -> None:
        self.source = source

    def field_operand(self, path: str, position: int) -> Operand:
        """The field ``path`` of the source; JSON fields cannot be compared."""
        try:
            found = resolve_field(self.source, path)
        except UnknownField as error:
            raise FilterError(str(error), position) from None
        if found.type == "json":
            raise FilterError(f"Field '{found.name}' holds JSON and cannot be compared; "
                              "filter on one key, as in attributes.<key>", position)
        return Operand(found.name, found.expression, found.type, found.nullable, position)

    @staticmethod
    def require_text(operand: Operand, what: str) -> None:
        """Raise FilterError unless ``operand`` holds text (or is an attribute)."""
        if operand.type not in TEXT_TYPES and operand.type != ATTRIBUTE:
            raise FilterError(f"{what} needs a text field; '{operand.name}' is {operand.type}",
                              operand.position)

    @staticmethod
    def text(operand: Operand) -> ColumnElement[str]:
        """The operand as text (an attribute's value as a string)."""
        if operand.type == ATTRIBUTE:
            return attribute_text(operand.expression)
        return operand.expression

    def _typeof(self, element: Any) -> tuple[ColumnElement[str], dict[str, tuple[str, ...]]]:
        """The SQL naming the JSON type of ``element``, and the names it uses per kind."""
        if self.source.dialect not in _JSON_TYPEOF:
            raise ValueError(f"no JSON attribute support for dialect {self.source.dialect!r}")
        typeof, names = _JSON_TYPEOF[self.source.dialect]
        return typeof(element), names

    def nullness(self, operand: Operand, null: bool) -> ColumnElement[bool]:
        """IS NULL (or IS NOT NULL); for attributes, a key absent or JSON null counts as null."""
        if operand.type == ATTRIBUTE:
            kind = func.coalesce(self._typeof(operand.expression)[0], "null")
            return kind == "null" if null else kind != "null"
        return operand.expression.is_(None) if null else operand.expression.is_not(None)

    def _typed(self, operand: Operand, lit: Literal) -> tuple[ColumnElement[Any], Any, str]:
        """The expression to compare, the value to bind, and a group key for ``in`` lists."""
        kind, field_type, expression = lit.kind, operand.type, operand.expression
        if field_type == ATTRIBUTE and kind in ("number", "bool"):
            # The value only where the key holds JSON of that kind, else NULL: no cast errors.
            typeof, names = self._typeof(expression)
            value = expression.as_float() if kind == "number" else expression.as_boolean()
            bound = float(lit.value) if kind == "number" else lit.value
            return case((typeof.in_(names[kind]), value)), bound, kind
        if field_type == ATTRIBUTE:
            return attribute_text(expression), _attribute_value(lit), "text"
        if (field_type in TEXT_TYPES and kind == "string") or (field_type == kind == "bool"):
            return expression, lit.value, field_type
        if field_type in ("int", "float") and kind == "number":
            value = lit.value
            if field_type == "float":  # SQLAlchemy would type the bound value from an int
                value = float(value)
            elif isinstance(value, float):
                value = literal(value, Float())
            elif not -_INT32 <= value < _INT32:  # else PostgreSQL casts it to INTEGER
                value = literal(value, BigInteger())
            return expression, value, field_type
        if field_type in ("date", "datetime"):
            value = _temporal(lit)
            if field_type == "date" and lit.computed and isinstance(value, datetime):
                value = value.date()  # the value is UTC: its date is today's date in UTC
            if field_type == "date" and type(value) is date:
                return expression, value, field_type
            if field_type == "datetime" and isinstance(value, datetime):
                return expression, value, field_type
            if field_type == "datetime" and value is not None:
                return expression, datetime.combine(value, time(), UTC), field_type
        raise FilterError(f"Cannot compare {field_type} field '{operand.name}' with {kind} "
                          f"{lit.text}", lit.position)

    def comparison(self, operand: Operand, op: str, op_position: int, lit: Literal,
                   negate: bool) -> ColumnElement[bool]:
        """``operand op lit`` for eq, ne, gt, ge, lt, le (``null`` only with eq/ne)."""
        op = op.lower()
        if lit.kind == "null":
            if op not in ("eq", "ne"):
                raise FilterError(f"null can only be compared with eq or ne, not '{op}'",
                                  op_position)
            return self.nullness(operand, (op == "eq") != negate)
        expression, value, _ = self._typed(operand, lit)
        if lit.kind == "bool" and op not in ("eq", "ne"):
            raise FilterError(f"Booleans can only be compared with eq or ne, not '{op}'",
                              op_position)
        if op == "ne":
            op, negate = "eq", not negate
        if not negate:
            compared: ColumnElement[bool] = _OPERATORS[op](expression, value)
            return compared
        return _or_null(_OPERATORS[_INVERSE[op]](expression, value), expression,
                        operand.nullable)

    def membership(self, operand: Operand, literals: list[Literal],
                   negate: bool) -> ColumnElement[bool]:
        """``operand in (literals)``, or ``not_in`` when ``negate``; an empty list matches
        nothing (``in``) or everything (``not_in``)."""
        if not literals:
            return true() if negate else false()
        groups: dict[str, tuple[ColumnElement[Any], list[Any]]] = {}
        for lit in literals:
            if lit.kind != "null":
                expression, value, key = self._typed(operand, lit)
                groups.setdefault(key, (expression, []))[1].append(value)
        has_null = any(lit.kind == "null" for lit in literals)
        if negate:
            parts = [_or_null(expression.not_in(group), expression, operand.nullable)
                     for expression, group in groups.values()]
            return and_(*parts, *([self.nullness(operand, False)] if has_null else []))
        parts = [expression.in_(group) for expression, group in groups.values()]
        return or_(*parts, *([self.nullness(operand, True)] if has_null else []))

    def postfix(self, operand: Operand, word: str, negate: bool) -> ColumnElement[bool]:
        """``isnull``, ``isnotnull``, ``isempty`` (null or ``''``) and ``isnotempty``."""
        word = word.lower()
        null = (word in ("isnull", "isempty")) != negate
        if word in ("isnull", "isnotnull") or (
                operand.type not in TEXT_TYPES and operand.type != ATTRIBUTE):
            return self.nullness(operand, null)
        text = self.text(operand)
        if null:
            return or_(self.nullness(operand, True), text == "")
        return and_(self.nullness(operand, False), text != "")

    def match(self, function: str, operand: Operand, lit: Literal,
              negate: bool) -> ColumnElement[bool]:
        """``contains``/``startswith``/``endswith``, ignoring the case of ASCII letters on
        both databases, with ``%``, ``_`` and the escape character matched literally. The
        operand must hold text. ``startswith`` on a text field that sorts by code point also
        bounds the field (:func:`~labapp.query.textmatch.prefix_bounds`)."""
        function = function.lower()
        if lit.kind != "string":
            raise FilterError(f"{function}() needs a quoted string, not {lit.text}",
                              lit.position)
        dialect = self.source.dialect
        pattern = folded(literal(like_pattern(lit.value, _PATTERNS[function]), String()),
                         dialect)
        text = folded(self.text(operand), dialect)
        if negate:
            return _or_null(text.not_like(pattern, escape="/"), text, operand.nullable)
        matched = text.like(pattern, escape="/")
        if (function == "startswith" and operand.type in TEXT_TYPES
                and code_point_order(dialect)):
            return and_(matched, *prefix_bounds(operand.expression, lit.value))
        return matched


def value_literal(value: Any) -> Literal:
    """A JSON (or Python row) value as a literal: null, bool, number, string, date, datetime.

    Raises ConditionError for objects, arrays and numbers out of range.
    """
    if value is None:
        return Literal("null", None, "null", 0)
    if isinstance(value, bool):
        return Literal("bool", value, "true" if value else "false", 0)
    if isinstance(value, int | float):
        if not (-INT64 <= value < INT64 if isinstance(value, int) else math.isfinite(value)):
            raise ConditionError(f"Number {value} is out of range")
        return Literal("number", value, str(value), 0)
    if isinstance(value, str):
        return Literal("string", value, "'" + value.replace("'", "''") + "'", 0)
    if isinstance(value, datetime):
        aware = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        return Literal("datetime", aware, aware.isoformat(), 0)
    if isinstance(value, date):
        return Literal("date", value, value.isoformat(), 0)
    raise ConditionError("A value must be a string, number, boolean or null, not "
                         f"{type(value).__name__}")


def compile_condition(source: FieldSource, field: str, op: str, value: Any = None, *,
                      relative: Callable[[str], Literal] | None = None) -> ColumnElement[bool]:
    """The condition ``field op value`` over ``source``, typed and escaped as ``$filter``.

    ``op`` is one of :data:`OPERATORS` (case-insensitive). ``value`` is a scalar for the
    comparisons (``None`` is null) and the matches, a list for ``in``/``not_in`` (at most
    :data:`MAX_VALUES`), and must be None for the postfix operators. Raises ConditionError.
    With ``relative`` (the dialect's reader of dates such as ``now() add duration'P14D'``),
    a string that is no ISO date or datetime, given for a date or datetime field, is read by it.
    """
    op = op.lower()
    builder = ConditionBuilder(source)

    def value_of(item: Any) -> Literal:
        if (relative is not None and operand.type in ("date", "datetime")
                and isinstance(item, str) and not _DATE.fullmatch(item)
                and not _DATETIME.fullmatch(item)):
            return relative(item)
        return value_literal(item)
    try:
        if op not in OPERATORS:
            raise ConditionError(f"Unknown operator '{op}'; use one of "
                                 + ", ".join(sorted(OPERATORS)))
        operand = builder.field_operand(field, 0)
        if op in MEMBERSHIP:
            if not isinstance(value, list | tuple):
                raise ConditionError(f"Operator '{op}' needs a list of values")
            if len(value) > MAX_VALUES:
                raise ConditionError(f"More than {MAX_VALUES} values")
            return builder.membership(operand, [value_of(item) for item in value],
                                      op == "not_in")
        if op in POSTFIX:
            if value is not None:
                raise ConditionError(f"Operator '{op}' takes no value")
            return builder.postfix(operand, op, False)
        if op in MATCHES:
            builder.require_text(operand, f"{op}()")
            return builder.match(op, operand, value_literal(value), False)
        return builder.comparison(operand, op, 0, value_of(value), False)
    except FilterError as error:
        raise ConditionError(error.message) from None
