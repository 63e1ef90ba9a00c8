"""The filter builder of the entity list (issue 21 §2): conditions a lab member picks instead
of typing ``$filter``.

A condition is a field of the class (offered by its label), an operator that suits the
field's type and a value. :func:`condition_text` writes it in the dialect of decisions §7
(string literals quoted with doubled single quotes, relative dates as ``date(now()) add
duration'P14D'``); :func:`add_condition` joins it to the list's filter with ``and``.
:mod:`labapp.entities.filter_chips` reads a filter back into these conditions.
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date

from labapp.access.actor import Actor
from labapp.model.registry import ClassSpec, FieldSpec, find_class
from labapp.query.entity_suggest import suggest_entities
from labapp.query.filter import FilterError, parse_filter
from labapp.reading.wording import label_of

TEXT, NUMBER, DATE, DATETIME, CHOICE, REF, BOOL = (
    "text", "number", "date", "datetime", "choice", "ref", "bool")
NEXT, LAST = "next", "last"
NO_VALUE = frozenset({"isempty", "isnotempty"})
DAY_COUNTS = frozenset({NEXT, LAST})
MAX_DAYS = 36_500
# Per kind of field: the operators offered, in order, as (operator, what the select shows).
OPERATORS: Mapping[str, tuple[tuple[str, str], ...]] = {
    TEXT: (("eq", "equals"), ("contains", "contains"), ("startswith", "starts with"),
           ("isempty", "is empty"), ("isnotempty", "is not empty")),
    NUMBER: (("eq", "= equal to"), ("ne", "≠ not equal to"), ("lt", "< less than"),
             ("le", "≤ at most"), ("gt", "> more than"), ("ge", "≥ at least")),
    DATE: (("lt", "before"), ("gt", "after"), ("eq", "on"),
           (NEXT, "within the next … days"), (LAST, "in the last … days")),
    # A time compared with a date compares with its midnight UTC: "on" would need two.
    DATETIME: (("lt", "before"), ("ge", "since"),
               (NEXT, "within the next … days"), (LAST, "in the last … days")),
    CHOICE: (("eq", "is"), ("ne", "is not")),
    REF: (("eq", "is"), ("ne", "is not")),
    BOOL: (("eq", "is"),),
}
_KINDS = {"int": NUMBER, "float": NUMBER, "date": DATE, "datetime": DATETIME, "bool": BOOL,
          "str": TEXT, "text": TEXT}
_HIDDEN = frozenset({"eClass", "attributes"})
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[+-]?\d+)?", re.IGNORECASE)


class ConditionError(ValueError):
    """A condition the builder cannot write: an unknown field or operator, a missing or
    malformed value. The message says what to fix, in the builder's words."""


@dataclass(frozen=True)
class BuilderField:
    """A field the builder offers: API name, label, kind (:data:`OPERATORS`' keys), the
    values a choice field may take and the class a reference points at."""

    name: str
    label: str
    kind: str
    choices: tuple[str, ...] = ()
    ref: str | None = None

    @property
    def operators(self) -> tuple[tuple[str, str], ...]:
        return OPERATORS[self.kind]


@dataclass(frozen=True)
class Condition:
    """One condition as the builder's inputs hold it: the value as typed (text, a number, an
    ISO date, a count of days, an entity id, ``true``/``false``)."""

    field: str
    op: str
    value: str = ""


def _kind(field: FieldSpec) -> str:
    if field.name == "status" or field.choices:
        return CHOICE
    if field.type == "ref":
        return REF if field.ref not in (None, "*") else TEXT
    return _KINDS[field.type]


def builder_fields(spec: ClassSpec) -> list[BuilderField]:
    """The stored fields of ``spec`` the builder offers, in registry order (JSON ones and
    the class name left out: they need the raw ``$filter``)."""
    found = []
    for field in spec.fields.values():
        if field.attr is None or field.type == "json" or field.name in _HIDDEN:
            continue
        kind = _kind(field)
        choices = (spec.workflow.statuses if field.name == "status"
                   else field.choices or ("true", "false") if kind == BOOL else ())
        found.append(BuilderField(field.name, label_of(field.name), kind, tuple(choices),
                                  field.ref if kind == REF else None))
    return found


def field_named(spec: ClassSpec, name: str) -> BuilderField:
    """The builder's field ``name`` (any case); ConditionError when it offers none."""
    for field in builder_fields(spec):
        if field.name.lower() == name.strip().lower():
            return field
    raise ConditionError("Choose a field to filter by." if not name.strip()
                         else f"{spec.name} has no field {name!r} to filter by.")


def quote(text: str) -> str:
    """``text`` as a ``$filter`` string literal: single quotes doubled."""
    return "'" + text.replace("'", "''") + "'"


def _days(field: BuilderField, value: str) -> int:
    if not value.isdigit() or not 1 <= int(value) <= MAX_DAYS:
        raise ConditionError(f"{field.label}: give the number of days as a whole number "
                             f"from 1 to {MAX_DAYS}.")
    return int(value)


def _literal(field: BuilderField, value: str) -> str:
    """The value as the literal a condition on ``field`` compares with."""
    if field.kind == NUMBER:
        if not _NUMBER.fullmatch(value) or not math.isfinite(float(value)):
            raise ConditionError(f"{field.label}: {value!r} is not a number.")
        return value
    if field.kind in (DATE, DATETIME):
        try:
            return date.fromisoformat(value).isoformat()
        except ValueError:
            raise ConditionError(f"{field.label}: {value!r} is not a date "
                                 "(YYYY-MM-DD).") from None
    if field.kind in (CHOICE, BOOL) and value not in field.choices:
        raise ConditionError(f"{field.label}: choose one of {', '.join(field.choices)}.")
    return value if field.kind == BOOL else quote(value)


def condition_text(spec: ClassSpec, condition: Condition) -> str:
    """The ``$filter`` text of ``condition`` on a field of ``spec``; ConditionError when the
    field, the operator or the value is not one the builder offers."""
    field = field_named(spec, condition.field)
    op, value, name = condition.op, condition.value.strip(), field.name
    if op not in dict(field.operators):
        raise ConditionError(f"{field.label}: choose a condition from the list.")
    if op in NO_VALUE:
        return f"{name} {op}"
    if not value:
        raise ConditionError(f"{field.label}: give a value to compare with.")
    if op in DAY_COUNTS:
        base = "date(now())" if field.kind == DATE else "now()"
        days = f"duration'P{_days(field, value)}D'"
        if op == NEXT:
            return f"{name} ge {base} and {name} le {base} add {days}"
        return f"{name} ge {base} sub {days} and {name} le {base}"
    if op in ("contains", "startswith"):
        return f"{op}({name},{quote(value)})"
    return f"{name} {op} {_literal(field, value)}"


def add_condition(spec: ClassSpec, filter_text: str, condition: Condition) -> str:
    """``filter_text`` and ``condition`` (an expression joined by ``or`` is parenthesised)."""
    added = condition_text(spec, condition)
    if not filter_text.strip():
        return added
    try:
        tree = parse_filter(filter_text)
    except FilterError:
        return f"{filter_text} and {added}"  # shown with its error, as typed
    joined = f"({filter_text})" if tree.data == "or_expr" else filter_text
    return f"{joined} and {added}"




def resolve_reference(actor: Actor, spec: ClassSpec, condition: Condition) -> Condition:
    """``condition`` with a reference typed by name (not picked from the suggestions) turned
    into the id of the one entity of that name the actor may see; an id they may see stays.
    ConditionError when none or several are called so."""
    field = field_named(spec, condition.field)
    target = find_class(field.ref or "") if field.kind == REF else None
    typed = condition.value.strip()
    if target is None or not typed or condition.op not in dict(field.operators):
        return condition
    found = suggest_entities(actor, target, typed)
    if any(entity["id"] == typed for entity in found):
        return condition
    named = [entity["id"] for entity in found if (entity["name"] or "").lower() == typed.lower()]
    if len(named) == 1:
        return Condition(field.name, condition.op, named[0])
    if named:
        raise ConditionError(f"{field.label}: {len(named)} are called {typed!r}; choose one "
                             "from the suggestions.")
    raise ConditionError(f"{field.label}: nothing you may see is called {typed!r}; choose "
                         "one from the suggestions.")
