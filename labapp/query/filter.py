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
from datetime import date
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
from labapp.query.fields import ATTRIBUTE, FieldSource, FilterField, entity_fields

__all__ = ["MAX_DEPTH", "MAX_FILTER_LENGTH", "MAX_VALUES", "FieldSource", "FilterError",
           "FilterField", "compile_filter", "entity_fields", "parse_filter"]

MAX_FILTER_LENGTH = 65_536
MAX_DEPTH = 32
_CACHED_LENGTH = 4096
_GRAMMAR = Path(__file__).with_name("grammar.lark")
_INTEGER = re.compile(r"-?\d+")
_CHUNK = 50  # terms per parenthesised group: keeps SQLite's expression tree shallow


@cache
def _parser() -> Lark:
    return Lark(_GRAMMAR.read_text(encoding="utf-8"), parser="lalr", lexer="basic",
                propagate_positions=True, g_regex_flags=re.IGNORECASE)


def _parse(text: str) -> Tree[Token]:
    try:
        return _parser().parse(text)
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


def compile_filter(text: str | None, source: FieldSource, *,
                   user_id: str | None) -> ColumnElement[bool]:
    """Compile filter ``text`` into a WHERE condition over ``source``; empty text is true.

    ``user_id`` is the caller, the value of the ``'!me'`` template.
    """
    if text is None or not text.strip():
        return true()
    return _Compiler(source, user_id).condition(parse_filter(text), False, 0)


def _syntax_error(text: str, error: UnexpectedInput) -> FilterError:
    if isinstance(error, UnexpectedCharacters):
        # lark declares pos_in_stream = None on the base class; this subclass sets the int.
        position: int = error.pos_in_stream  # type: ignore[assignment]
        if text[position] == "'":
            return FilterError("Unterminated string", position)
        return FilterError(f"Unexpected character '{text[position]}'", position)
    if isinstance(error, UnexpectedToken) and error.token.type != "$END":
        return FilterError(f"Unexpected token '{error.token}'", _position(error.token))
    return FilterError("Unexpected end of filter", len(text))


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


class _Compiler(ConditionBuilder):
    """Walks a parsed filter; ``negate`` is pushed down to the comparisons."""

    def __init__(self, source: FieldSource, user_id: str | None) -> None:
        super().__init__(source)
        self.user_id = user_id
        self.values = 0

    def literal(self, child: Tree[Token] | Token) -> Literal:
        """The value of the token ``child``, counting it against :data:`MAX_VALUES`."""
        token = _token(child)
        self.values += 1
        if self.values > MAX_VALUES:
            raise FilterError(f"Filter has more than {MAX_VALUES} values", _position(token))
        return _literal(token)

    def condition(self, node: Tree[Token], negate: bool, depth: int) -> ColumnElement[bool]:
        kind = node.data
        if kind in ("or_expr", "and_expr"):
            parts = [self.condition(_tree(child), negate, depth) for child in node.children]
            return _combine(and_ if (kind == "and_expr") != negate else or_, parts)
        if kind in ("group", "negation"):
            self._check_depth(depth, node.meta.start_pos)
            return self.condition(_tree(node.children[0]), negate != (kind == "negation"),
                                  depth + 1)
        compile_node: Callable[[Tree[Token], bool, int], ColumnElement[bool]] = getattr(
            self, f"_{kind}")
        return compile_node(node, negate, depth)

    @staticmethod
    def _check_depth(depth: int, position: int) -> None:
        if depth >= MAX_DEPTH:
            raise FilterError(f"Filter is nested more than {MAX_DEPTH} levels deep", position)

    def operand(self, node: Tree[Token] | Token, depth: int) -> Operand:
        node = _tree(node)
        if node.data == "case":
            self._check_depth(depth, node.meta.start_pos)
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
