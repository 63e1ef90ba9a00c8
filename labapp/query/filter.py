"""The ``$filter`` dialect of decisions §7, compiled to SQLAlchemy expressions.

One parser serves entity lists, views, search and OData; the dataset's structured filters
build the same conditions without text (:func:`~labapp.query.conditions.compile_condition`).
The grammar is in ``grammar.lark``. Field names resolve through a
:class:`~labapp.query.fields.FieldSource` (a whitelist: the registry's stored fields of a
class, or a view's columns) and every value becomes a bound parameter, so no filter text
reaches SQL. This module parses and walks the tree; :mod:`labapp.query.conditions` builds
each comparison (typing, escaping, nulls).

Semantics are two-valued, as in OData: a comparison with a missing (NULL) value is false and
its negation true. ``name ne 'x'`` therefore matches rows whose name is null, and ``not``
is pushed down to the comparisons (De Morgan) so ``not (amount gt 5)`` matches them too.
The result is meant for a WHERE clause.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import UTC, date, datetime
from functools import cache, lru_cache
from pathlib import Path

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken
from sqlalchemy import Boolean, ColumnElement, and_, func, or_, true, type_coerce

from labapp.query.conditions import (
    INT64,
    MAX_VALUES,
    ConditionBuilder,
    FilterError,
    Literal,
    Operand,
    parse_datetime,
)
from labapp.query.durations import parse_duration, shift
from labapp.query.fields import ATTRIBUTE, FieldSource, FilterField, entity_fields

__all__ = ["FILTER_HELP", "MAX_DEPTH", "MAX_FILTER_LENGTH", "MAX_VALUES", "FieldSource",
           "FilterError", "FilterField", "compile_filter", "entity_fields", "parse_filter"]

MAX_FILTER_LENGTH = 65_536
MAX_DEPTH = 32
_CACHED_LENGTH = 4096
_GRAMMAR = Path(__file__).with_name("grammar.lark")
_INTEGER = re.compile(r"-?\d+")
_CHUNK = 50  # terms per parenthesised group: keeps SQLite's expression tree shallow
_FUNCTIONS = ("now", "date")
FILTER_HELP = (
    "OData v4 filter (decisions §7): eq ne gt ge lt le, and or not, parentheses, in (...), "
    "not_in (...), postfix isnull isnotnull isempty isnotempty, contains/startswith/endswith/"
    "tolower/toupper, field template '!me'. Dates and times may be relative, evaluated at "
    "request time in UTC: now(), date(now()) (today), and add/sub with a duration of days, "
    "hours, minutes and seconds, as in expiryDate lt now() add duration'P14D' or createdUtc "
    "ge now() sub duration'PT12H'; a date field compared with a time compares its date.")


@cache
def _parser() -> Lark:
    return Lark(_GRAMMAR.read_text(encoding="utf-8"), parser="lalr", lexer="basic",
                start=["start", "instant"], propagate_positions=True,
                g_regex_flags=re.IGNORECASE)


def _parse(text: str) -> Tree[Token]:
    try:
        return _parser().parse(text, start="start")
    except UnexpectedInput as error:
        raise _syntax_error(text, error) from None


_parse_cached = lru_cache(maxsize=512)(_parse)


def parse_filter(text: str) -> Tree[Token]:
    """Parse filter ``text`` into a lark tree; raise FilterError if it is invalid.

    Trees of filters up to ``_CACHED_LENGTH`` characters are cached per text (long ones are
    rare and would make the cache large).
    """
    if len(text) > MAX_FILTER_LENGTH:
        raise FilterError(f"Filter is longer than {MAX_FILTER_LENGTH} characters",
                          MAX_FILTER_LENGTH)
    return _parse_cached(text) if len(text) <= _CACHED_LENGTH else _parse(text)


def compile_filter(text: str | None, source: FieldSource, *, user_id: str | None,
                   now: datetime | None = None) -> ColumnElement[bool]:
    """Compile filter ``text`` into a WHERE condition over ``source``; empty text is true.

    ``user_id`` is the caller, the value of the ``'!me'`` template. ``now`` (aware) is the
    value of ``now()``, by default the current time in UTC, read once for the whole filter.
    """
    if text is None or not text.strip():
        return true()
    moment = datetime.now(UTC) if now is None else now.astimezone(UTC)
    return _Compiler(source, user_id, _Instants(text, moment)).condition(
        parse_filter(text), False, 0)


def relative_value(text: str, now: datetime) -> Literal:
    """The date or time ``text`` names as a ``$filter`` value does (``date(now())``,
    ``now() sub duration'P7D'``), with ``now`` as ``now()``; FilterError if it is not one."""
    if len(text) > MAX_FILTER_LENGTH:
        raise FilterError(f"Date is longer than {MAX_FILTER_LENGTH} characters",
                          MAX_FILTER_LENGTH)
    try:
        tree = _parser().parse(text, start="instant")
    except UnexpectedInput as error:
        syntax = _syntax_error(text, error)
        raise FilterError(f"Invalid date or datetime '{text}': {syntax.message}",
                          syntax.position) from None
    if isinstance(tree, Token):
        return _literal(tree)
    return _Instants(text, now.astimezone(UTC)).literal(tree)


def _syntax_error(text: str, error: UnexpectedInput) -> FilterError:
    if isinstance(error, UnexpectedCharacters):
        # lark declares pos_in_stream = None on the base class; this subclass sets the int.
        position: int = error.pos_in_stream  # type: ignore[assignment]
        if text[position] == "'":
            return FilterError("Unterminated string", position)
        return FilterError(f"Unexpected character '{text[position]}'", position)
    if isinstance(error, UnexpectedToken) and error.token.type == "FUNCTION":
        return _function_error(error.token)
    if isinstance(error, UnexpectedToken) and error.token.type == "DURATION":
        return FilterError("A duration needs a date or time to add it to, as in now() add "
                           "duration'P14D'", _position(error.token))
    if isinstance(error, UnexpectedToken) and error.token.type != "$END":
        return FilterError(f"Unexpected token '{error.token}'", _position(error.token))
    return FilterError("Unexpected end of filter", len(text))


def _function_error(token: Token) -> FilterError:
    """A function where the grammar has none: an unknown name, or now()/date() placed first."""
    if token.lower() in _FUNCTIONS:
        return FilterError(f"{token.lower()}() can only be a value: put the field first, as in "
                           f"expiryDate lt {token.lower()}(...)", _position(token))
    return FilterError(f"Unknown function '{token}'", _position(token))


def _position(token: Token) -> int:
    """Where ``token`` starts in the filter text (the lexer records it for every token)."""
    if token.start_pos is None:
        raise TypeError(f"token {token!r} has no position")
    return token.start_pos


def _tree(child: Tree[Token] | Token) -> Tree[Token]:
    """A child the grammar makes a subtree (TypeError if the grammar says otherwise)."""
    if not isinstance(child, Tree):
        raise TypeError(f"expected a subtree, got the token {child!r}")
    return child


def _token(child: Tree[Token] | Token) -> Token:
    """A child the grammar makes a token (TypeError if the grammar says otherwise)."""
    if not isinstance(child, Token):
        raise TypeError(f"expected a token, got the subtree {child.data!r}")
    return child


def _literal(token: Token) -> Literal:
    text, kind, position = str(token), token.type, _position(token)
    if kind == "STRING":
        return Literal("string", text[1:-1].replace("''", "'"), text, position)
    if kind == "NULL":
        return Literal("null", None, text, position)
    if kind in ("TRUE", "FALSE"):
        return Literal("bool", kind == "TRUE", text, position)
    try:
        if kind == "DATE":
            return Literal("date", date.fromisoformat(text), text, position)
        if kind == "DATETIME":
            return Literal("datetime", parse_datetime(text), text, position)
    except (ValueError, OverflowError):
        raise FilterError(f"Invalid {kind.lower()} '{text}'", position) from None
    value: int | float = int(text) if _INTEGER.fullmatch(text) else float(text)
    if not (-INT64 <= value < INT64 if isinstance(value, int) else math.isfinite(value)):
        raise FilterError(f"Number '{text}' is out of range", position)
    return Literal("number", value, text, position)


def _combine(junction: Callable[..., ColumnElement[bool]],
             parts: list[ColumnElement[bool]]) -> ColumnElement[bool]:
    """``and_``/``or_`` of many parts, grouped in parentheses SQLAlchemy keeps (not flat)."""
    while len(parts) > _CHUNK:
        parts = [type_coerce(junction(*parts[start:start + _CHUNK]), Boolean).self_group()
                 for start in range(0, len(parts), _CHUNK)]
    return junction(*parts)


class _Instants:
    """Computes the dates and times of a filter's ``text``; ``now`` (aware UTC) is ``now()``."""

    def __init__(self, text: str, now: datetime) -> None:
        self.text = text
        self.now = now

    def literal(self, node: Tree[Token]) -> Literal:
        """The computed date or datetime of ``node``, shown in errors as the text it spans."""
        value = self._value(node, 0)
        return Literal("datetime" if isinstance(value, datetime) else "date", value,
                       self.text[node.meta.start_pos:node.meta.end_pos], node.meta.start_pos,
                       computed=True)

    def _value(self, node: Tree[Token] | Token, depth: int) -> date:
        """A literal, ``now()``, ``date(x)`` or ``x add/sub duration'...'`` (a chain of
        shifts is walked, not recursed)."""
        shifts: list[tuple[Token, Token]] = []
        while isinstance(node, Tree) and node.data == "shift":
            node, op, duration = node.children
            shifts.append((_token(op), _token(duration)))
        value = self._call(node, depth) if isinstance(node, Tree) else _literal(node).value
        for op, duration in reversed(shifts):
            delta = parse_duration(str(duration), _position(duration))
            value = shift(value, delta if op.lower() == "add" else -delta, _position(op))
        return value

    def _call(self, node: Tree[Token], depth: int) -> date:
        name_child, argument = node.children
        name = _token(name_child)
        if name.lower() not in _FUNCTIONS:
            raise _function_error(name)
        if name.lower() == "now":
            if argument is not None:
                raise FilterError("now() takes no argument", _position(name))
            return self.now
        if argument is None:
            raise FilterError("date() needs a date or time, as in date(now())",
                              node.meta.end_pos - 1)
        _Compiler.check_depth(depth, node.meta.start_pos)
        value = self._value(argument, depth + 1)
        return value.date() if isinstance(value, datetime) else value


class _Compiler(ConditionBuilder):
    """Walks a parsed filter; ``negate`` is pushed down to the comparisons."""

    def __init__(self, source: FieldSource, user_id: str | None, instants: _Instants) -> None:
        super().__init__(source)
        self.user_id = user_id
        self.instants = instants
        self.values = 0

    def literal(self, child: Tree[Token] | Token) -> Literal:
        """The value of ``child`` (a token, or a date or time to compute), counting it
        against :data:`MAX_VALUES`."""
        position = _position(child) if isinstance(child, Token) else child.meta.start_pos
        self.values += 1
        if self.values > MAX_VALUES:
            raise FilterError(f"Filter has more than {MAX_VALUES} values", position)
        return _literal(child) if isinstance(child, Token) else self.instants.literal(child)

    def condition(self, node: Tree[Token], negate: bool, depth: int) -> ColumnElement[bool]:
        kind = node.data
        if kind in ("or_expr", "and_expr"):
            parts = [self.condition(_tree(child), negate, depth) for child in node.children]
            return _combine(and_ if (kind == "and_expr") != negate else or_, parts)
        if kind in ("group", "negation"):
            self.check_depth(depth, node.meta.start_pos)
            return self.condition(_tree(node.children[0]), negate != (kind == "negation"),
                                  depth + 1)
        compile_node: Callable[[Tree[Token], bool, int], ColumnElement[bool]] = getattr(
            self, f"_{kind}")
        return compile_node(node, negate, depth)

    @staticmethod
    def check_depth(depth: int, position: int) -> None:
        """FilterError at ``position`` when ``depth`` reaches :data:`MAX_DEPTH`."""
        if depth >= MAX_DEPTH:
            raise FilterError(f"Filter is nested more than {MAX_DEPTH} levels deep", position)

    def operand(self, node: Tree[Token] | Token, depth: int) -> Operand:
        node = _tree(node)
        if node.data == "case":
            self.check_depth(depth, node.meta.start_pos)
            function_token, inner_node = node.children
            function = _token(function_token).lower()
            inner = self.operand(inner_node, depth + 1)
            self.require_text(inner, f"{function}()")
            sql = func.lower if function == "tolower" else func.upper
            return Operand(f"{function}({inner.name})", sql(self.text(inner)), "str",
                           inner.nullable, node.meta.start_pos)
        token = _token(node.children[0])
        return self.field_operand(str(token), _position(token))

    def _compare(self, node: Tree[Token], negate: bool, depth: int) -> ColumnElement[bool]:
        operand_node, op_child, value = node.children
        op = _token(op_child)
        return self.comparison(self.operand(operand_node, depth), op, _position(op),
                               self.literal(value), negate)

    def _bool_test(self, node: Tree[Token], negate: bool, depth: int) -> ColumnElement[bool]:
        operand = self.operand(node.children[0], depth)
        if operand.type not in ("bool", ATTRIBUTE):
            raise FilterError(f"Expected an operator after '{operand.name}'", node.meta.end_pos)
        return self.comparison(operand, "eq", operand.position,
                               Literal("bool", True, "true", operand.position), negate)

    def _template(self, node: Tree[Token], negate: bool, depth: int) -> ColumnElement[bool]:
        operand_node, child = node.children
        token = _token(child)
        position = _position(token)
        name = self.literal(token).value
        if name.lower() != "!me":
            raise FilterError(f"Unknown template '{name}'", position)
        if self.user_id is None:
            raise FilterError("Template '!me' needs a signed-in user", position)
        lit = Literal("string", self.user_id, str(token), position)
        return self.comparison(self.operand(operand_node, depth), "eq", position, lit,
                               negate)

    def _in_list(self, node: Tree[Token], negate: bool, depth: int) -> ColumnElement[bool]:
        operand_node, word, values = node.children
        operand = self.operand(operand_node, depth)
        literals = [self.literal(token) for token in _tree(values).children]
        return self.membership(operand, literals,
                               negate != (_token(word).lower() == "not_in"))

    def _postfix(self, node: Tree[Token], negate: bool, depth: int) -> ColumnElement[bool]:
        operand_node, word = node.children
        return self.postfix(self.operand(operand_node, depth), _token(word), negate)

    def _match(self, node: Tree[Token], negate: bool, depth: int) -> ColumnElement[bool]:
        function_child, operand_node, value = node.children
        function = _token(function_child)
        operand = self.operand(operand_node, depth)
        self.require_text(operand, f"{function.lower()}()")
        return self.match(function, operand, self.literal(value), negate)

    def _match_compare(self, node: Tree[Token], negate: bool, depth: int) -> ColumnElement[bool]:
        *call, op_child, value = node.children
        op = _token(op_child)
        lit = self.literal(value)
        if op.lower() not in ("eq", "ne") or lit.kind != "bool":
            raise FilterError(
                f"{_token(call[0]).lower()}() can only be compared with eq/ne true/false",
                _position(op))
        flip = (op.lower() == "ne") != (not lit.value)
        return self._match(Tree("match", call, node.meta), negate != flip, depth)
