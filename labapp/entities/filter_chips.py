"""Chips of the entity list's filter (issue 21 §2): a filter text read back into the filter
builder's conditions (:mod:`labapp.entities.filter_builder`).

:func:`read_chips` cuts a filter at its top-level ``and`` and reads every part the builder
could have written back into a condition, shown as a removable chip; whatever it cannot read
becomes one "Custom expression" chip holding the parts' own text. Removing a chip leaves the
other parts' text exactly as it was.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from lark import Token, Tree

from labapp.access.actor import Actor
from labapp.entities.filter_builder import (
    BOOL,
    CHOICE,
    DATE,
    DATETIME,
    DAY_COUNTS,
    LAST,
    NEXT,
    NO_VALUE,
    NUMBER,
    REF,
    TEXT,
    Condition,
    ConditionError,
    condition_text,
    field_named,
)
from labapp.entities.loading import visible_names
from labapp.model.registry import ClassSpec
from labapp.query.filter import FilterError, parse_filter
from labapp.reading.wording import words_of

_SYMBOLS = {"eq": "=", "ne": "≠", "lt": "<", "le": "≤", "gt": ">", "ge": "≥"}
_DAYS = re.compile(r"duration'P(\d+)D'", re.IGNORECASE)
# The literal tokens a value of each kind may be written as.
_TOKENS = {TEXT: {"STRING"}, CHOICE: {"STRING"}, REF: {"STRING"}, NUMBER: {"NUMBER"},
           DATE: {"DATE"}, DATETIME: {"DATE"}, BOOL: {"TRUE", "FALSE"}}


@dataclass(frozen=True)
class Chip:
    """An active condition: its words, the filter text it stands for, and the filter that
    is left when it is removed. ``custom`` marks the chip of everything else."""

    label: str
    text: str
    remaining: str
    custom: bool = False


@dataclass(frozen=True)
class _Atom:
    """A comparison of the form the builder writes: a field, an operator, and either a
    literal token or a relative date (``base`` now/today moved by ``days``)."""

    field: str
    op: str
    token: Token | None = None
    base: str | None = None
    days: int = 0


def _field_name(node: Tree[Token] | Token) -> str | None:
    if isinstance(node, Tree) and node.data == "field" and isinstance(node.children[0], Token):
        return str(node.children[0])
    return None


def _relative(node: Tree[Token]) -> tuple[str, int] | None:
    """``(now|today, days)`` of ``now()``, ``date(now())`` or either moved by whole days."""
    days = 0
    if node.data == "shift":
        inner, op, duration = node.children
        found = _DAYS.fullmatch(str(duration))
        if not isinstance(inner, Tree) or found is None:
            return None
        days = int(found.group(1)) * (1 if str(op).lower() == "add" else -1)
        node = inner
    if node.data != "call":
        return None
    name, argument = node.children
    if str(name).lower() == "now" and argument is None:
        return "now", days
    if (str(name).lower() == "date" and isinstance(argument, Tree)
            and _relative(argument) == ("now", 0)):
        return "today", days
    return None


def _atom(node: Tree[Token]) -> _Atom | None:
    """The builder's reading of one part of a conjunction, or None."""
    children = node.children
    if node.data == "compare":
        name, op, value = _field_name(children[0]), children[1], children[2]
        if name is None:
            return None
        if isinstance(value, Token):
            return _Atom(name, str(op).lower(), token=value)
        relative = _relative(value)
        return None if relative is None else _Atom(name, str(op).lower(), base=relative[0],
                                                    days=relative[1])
    if node.data == "match":
        function, operand, value = children
        name = _field_name(operand)
        if name is None or str(function).lower() not in ("contains", "startswith"):
            return None
        return _Atom(name, str(function).lower(), token=value) if isinstance(
            value, Token) else None
    if node.data == "postfix":
        name, word = _field_name(children[0]), str(children[1]).lower()
        return None if name is None or word not in NO_VALUE else _Atom(name, word)
    return None


def _pair(first: _Atom, second: _Atom) -> Condition | None:
    """"Within the next / in the last N days": ``f ge X and f le Y`` with X, Y relative."""
    if (first.field.lower() != second.field.lower() or (first.op, second.op) != ("ge", "le")
            or first.base is None or first.base != second.base):
        return None
    if first.days == 0 and second.days > 0:
        return Condition(first.field, NEXT, str(second.days))
    if first.days < 0 and second.days == 0:
        return Condition(first.field, LAST, str(-first.days))
    return None


def _condition(spec: ClassSpec, atom: _Atom) -> Condition | None:
    """The builder's condition ``atom`` stands for, if the builder offers it."""
    try:
        field = field_named(spec, atom.field)
    except ConditionError:
        return None
    if atom.op in NO_VALUE:
        value = ""
    elif atom.token is None or atom.token.type not in _TOKENS[field.kind]:
        return None
    elif atom.token.type == "STRING":
        value = str(atom.token)[1:-1].replace("''", "'")
    else:
        value = str(atom.token).lower()
    return _valid(spec, Condition(field.name, atom.op, value))


def _valid(spec: ClassSpec, condition: Condition) -> Condition | None:
    """``condition`` with the field's own spelling, if the builder could have written it."""
    try:
        name = field_named(spec, condition.field).name
        condition = Condition(name, condition.op, condition.value)
        condition_text(spec, condition)
    except ConditionError:
        return None
    return condition


def _words(spec: ClassSpec, condition: Condition, names: Mapping[str, str]) -> str:
    """A chip's label: "Status is Stored", "Expiry date within the next 14 days"."""
    field = field_named(spec, condition.field)
    op, value = condition.op, condition.value
    phrase = dict(field.operators)[op]
    if op in DAY_COUNTS:
        unit = "day" if value == "1" else "days"
        phrase = phrase.replace("… days", f"{value} {unit}")
    elif op in NO_VALUE:
        pass
    elif field.kind == NUMBER:
        phrase = f"{_SYMBOLS[op]} {value}"
    elif field.kind == BOOL:
        phrase = f"is {'yes' if value == 'true' else 'no'}"
    elif field.kind == REF:
        phrase = f"{phrase} {names.get(value) or value}"
    elif field.kind == TEXT:
        phrase = f"{phrase} “{value}”"
    elif field.kind == CHOICE:
        phrase = f"{phrase} {words_of(value)}"
    else:
        phrase = f"{phrase} {value}"
    return f"{field.label} {phrase}"


def read_conditions(spec: ClassSpec, filter_text: str) -> list[tuple[str, Condition | None]]:
    """The top-level parts of ``filter_text`` as ``(text, condition)``: the builder's
    condition where it could have written the part (a relative range spans two comparisons),
    None where not. A filter that does not parse is one part; an ``or`` at the top is one
    part, parenthesised."""
    if not filter_text.strip():
        return []
    try:
        tree = parse_filter(filter_text)
    except FilterError:
        return [(filter_text, None)]
    if tree.data == "or_expr":
        return [(f"({filter_text})", None)]
    nodes = [child for child in tree.children if isinstance(child, Tree)] \
        if tree.data == "and_expr" else [tree]
    texts = [filter_text[node.meta.start_pos:node.meta.end_pos] for node in nodes]
    atoms = [_atom(node) for node in nodes]
    parts: list[tuple[str, Condition | None]] = []
    index = 0
    while index < len(nodes):
        atom, following = atoms[index], atoms[index + 1] if index + 1 < len(nodes) else None
        paired = _pair(atom, following) if atom and following else None
        paired = _valid(spec, paired) if paired else None
        if paired is not None:
            parts.append((f"{texts[index]} and {texts[index + 1]}", paired))
            index += 2
            continue
        parts.append((texts[index], _condition(spec, atom) if atom else None))
        index += 1
    return parts


def _reference_names(actor: Actor, spec: ClassSpec,
                     conditions: Iterable[Condition]) -> dict[str, str]:
    ids = [condition.value for condition in conditions
           if field_named(spec, condition.field).kind == REF]
    return {entity_id: name for entity_id, (_, name) in visible_names(actor, ids).items()
            if name}


def read_chips(actor: Actor, spec: ClassSpec, filter_text: str) -> list[Chip]:
    """The chips of ``filter_text``: one per condition the builder reads, in order, then one
    "Custom expression" chip for all the other parts. References are named as ``actor``
    sees them (an id they may not see stays an id)."""
    parts = read_conditions(spec, filter_text)
    known = [condition for _, condition in parts if condition is not None]
    names = _reference_names(actor, spec, known)

    def without(removed: Iterable[int]) -> str:
        gone = set(removed)
        return " and ".join(text for index, (text, _) in enumerate(parts) if index not in gone)

    chips = [Chip(_words(spec, condition, names), text, without([index]))
             for index, (text, condition) in enumerate(parts) if condition is not None]
    custom = [index for index, (_, condition) in enumerate(parts) if condition is None]
    if custom:
        text = " and ".join(parts[index][0] for index in custom)
        chips.append(Chip("Custom expression", text, without(custom), custom=True))
    return chips
