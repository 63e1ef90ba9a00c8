"""The ``$filter`` dialect of decisions §7, compiled to SQLAlchemy expressions.

One parser serves entity lists, dataset queries, views, search and OData. The grammar is in
``grammar.lark``. Field names resolve through a :class:`~labapp.query.fields.FieldSource` (a
whitelist: the registry's stored fields of a class, or a view's columns) and every value
becomes a bound parameter, so no filter text reaches SQL.

Semantics are two-valued, as in OData: a comparison with a missing (NULL) value is false and
its negation true. ``name ne 'x'`` therefore matches rows whose name is null, and ``not``
is pushed down to the comparisons (De Morgan) so ``not (amount gt 5)`` matches them too.
The result is meant for a WHERE clause.
"""
from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken
from sqlalchemy import (BigInteger, Boolean, ColumnElement, Float, String, and_, case, func,
                        literal, or_, true, type_coerce)

from labapp.errors import InvalidInput
from labapp.query.fields import (ATTRIBUTE, TEXT_TYPES, FieldSource, FilterField, UnknownField,
                                 attribute_text, entity_fields, resolve_field)

__all__ = ["MAX_DEPTH", "MAX_FILTER_LENGTH", "MAX_VALUES", "FieldSource", "FilterError",
           "FilterField", "compile_filter", "entity_fields", "parse_filter"]

MAX_FILTER_LENGTH = 65_536
MAX_DEPTH = 32
MAX_VALUES = 10_000  # literals per filter: bound parameters (SQLite allows 32766 per query)
_CACHED_LENGTH = 4096
_GRAMMAR = Path(__file__).with_name("grammar.lark")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})?",
                       re.IGNORECASE)
_INTEGER = re.compile(r"-?\d+")
_INT32, _INT64 = 2 ** 31, 2 ** 63
_OPERATORS = {"eq": operator.eq, "ne": operator.ne, "gt": operator.gt, "ge": operator.ge,
              "lt": operator.lt, "le": operator.le}
_INVERSE = {"eq": "ne", "gt": "le", "ge": "lt", "lt": "ge", "le": "gt"}
_PATTERNS = {"contains": "%{}%", "startswith": "{}%", "endswith": "%{}"}
# Per dialect: SQL naming the JSON type of ``attributes[key]`` and its names for numbers and
# booleans. SQLite's json_type needs the document and the path (``element.left/right``):
# of the extracted value it would call ``true`` an integer.
_JSON_TYPEOF = {
    "postgresql": (func.jsonb_typeof, {"number": ("number",), "bool": ("boolean",)}),
    "sqlite": (lambda element: func.json_type(element.left, element.right),
               {"number": ("integer", "real"), "bool": ("true", "false")}),
}
_CHUNK = 50  # terms per parenthesised group: keeps SQLite's expression tree shallow


class FilterError(InvalidInput):
    """400 ``invalid_filter``: the filter is malformed or names something it may not."""

    code = "invalid_filter"
    title = "Invalid filter"

    def __init__(self, message: str, position: int) -> None:
        detail = f"{message} at position {position}"
        super().__init__(detail, errors=[{"field": "$filter", "message": detail}])
        self.position = position


@cache
def _parser() -> Lark:
    return Lark(_GRAMMAR.read_text(encoding="utf-8"), parser="lalr", lexer="basic",
                propagate_positions=True, g_regex_flags=re.IGNORECASE)


def _parse(text: str) -> Tree:
    try:
        return _parser().parse(text)
    except UnexpectedInput as error:
        raise _syntax_error(text, error) from None


_parse_cached = lru_cache(maxsize=512)(_parse)


def parse_filter(text: str) -> Tree:
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
        position = error.pos_in_stream
        if text[position] == "'":
            return FilterError("Unterminated string", position)
        return FilterError(f"Unexpected character '{text[position]}'", position)
    if isinstance(error, UnexpectedToken) and error.token.type != "$END":
        return FilterError(f"Unexpected token '{error.token}'", error.token.start_pos)
    return FilterError("Unexpected end of filter", len(text))


@dataclass(frozen=True)
class _Literal:
    kind: str  # null, bool, number, string, date, datetime
    value: Any
    text: str
    position: int


@dataclass(frozen=True)
class _Operand:
    name: str
    expression: ColumnElement[Any]
    type: str
    nullable: bool
    position: int


def _parse_datetime(text: str) -> datetime:
    value = datetime.fromisoformat(text.upper())
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _literal(token: Token) -> _Literal:
    text, kind, position = str(token), token.type, token.start_pos
    if kind == "STRING":
        return _Literal("string", text[1:-1].replace("''", "'"), text, position)
    if kind == "NULL":
        return _Literal("null", None, text, position)
    if kind in ("TRUE", "FALSE"):
        return _Literal("bool", kind == "TRUE", text, position)
    try:
        if kind == "DATE":
            return _Literal("date", date.fromisoformat(text), text, position)
        if kind == "DATETIME":
            return _Literal("datetime", _parse_datetime(text), text, position)
    except (ValueError, OverflowError):
        raise FilterError(f"Invalid {kind.lower()} '{text}'", position) from None
    value: int | float = int(text) if _INTEGER.fullmatch(text) else float(text)
    if not (-_INT64 <= value < _INT64 if isinstance(value, int) else math.isfinite(value)):
        raise FilterError(f"Number '{text}' is out of range", position)
    return _Literal("number", value, text, position)


def _temporal(lit: _Literal) -> date | None:
    """A date or datetime literal, or a quoted one; None for other kinds."""
    if lit.kind in ("date", "datetime"):
        return lit.value
    if lit.kind != "string":
        return None
    try:
        if _DATE.fullmatch(lit.value):
            return date.fromisoformat(lit.value)
        if _DATETIME.fullmatch(lit.value):
            return _parse_datetime(lit.value)
    except (ValueError, OverflowError):
        pass
    raise FilterError(f"Invalid date or datetime {lit.text}", lit.position)


def _or_null(condition: ColumnElement[bool], expression: ColumnElement[Any],
             nullable: bool) -> ColumnElement[bool]:
    return or_(condition, expression.is_(None)) if nullable else condition


def _combine(junction, parts: list[ColumnElement[bool]]) -> ColumnElement[bool]:
    """``and_``/``or_`` of many parts, grouped in parentheses SQLAlchemy keeps (not flat)."""
    while len(parts) > _CHUNK:
        parts = [type_coerce(junction(*parts[start:start + _CHUNK]), Boolean).self_group()
                 for start in range(0, len(parts), _CHUNK)]
    return junction(*parts)


class _Compiler:
    """Walks a parsed filter; ``negate`` is pushed down to the comparisons."""

    def __init__(self, source: FieldSource, user_id: str | None) -> None:
        self.source = source
        self.user_id = user_id
        self.values = 0

    def literal(self, token: Token) -> _Literal:
        """The value of ``token``, counting it against :data:`MAX_VALUES`."""
        self.values += 1
        if self.values > MAX_VALUES:
            raise FilterError(f"Filter has more than {MAX_VALUES} values", token.start_pos)
        return _literal(token)

    def condition(self, node: Tree, negate: bool, depth: int) -> ColumnElement[bool]:
        kind = node.data
        if kind in ("or_expr", "and_expr"):
            parts = [self.condition(child, negate, depth) for child in node.children]
            return _combine(and_ if (kind == "and_expr") != negate else or_, parts)
        if kind in ("group", "negation"):
            self._check_depth(depth, node.meta.start_pos)
            return self.condition(node.children[0], negate != (kind == "negation"), depth + 1)
        return getattr(self, f"_{kind}")(node, negate, depth)

    @staticmethod
    def _check_depth(depth: int, position: int) -> None:
        if depth >= MAX_DEPTH:
            raise FilterError(f"Filter is nested more than {MAX_DEPTH} levels deep", position)

    def operand(self, node: Tree, depth: int) -> _Operand:
        if node.data == "case":
            self._check_depth(depth, node.meta.start_pos)
            function, inner_node = node.children
            inner = self.operand(inner_node, depth + 1)
            self._require_text(inner, f"{function.lower()}()")
            sql = func.lower if function.lower() == "tolower" else func.upper
            return _Operand(f"{function.lower()}({inner.name})", sql(self._text(inner)), "str",
                            inner.nullable, node.meta.start_pos)
        token = node.children[0]
        try:
            found = resolve_field(self.source, str(token))
        except UnknownField as error:
            raise FilterError(str(error), token.start_pos) from None
        if found.type == "json":
            raise FilterError(f"Field '{found.name}' holds JSON and cannot be compared; "
                              "filter on one key, as in attributes.<key>", token.start_pos)
        return _Operand(found.name, found.expression, found.type, found.nullable,
                        token.start_pos)

    @staticmethod
    def _require_text(operand: _Operand, what: str) -> None:
        if operand.type not in TEXT_TYPES and operand.type != ATTRIBUTE:
            raise FilterError(f"{what} needs a text field; '{operand.name}' is {operand.type}",
                              operand.position)

    @staticmethod
    def _text(operand: _Operand) -> ColumnElement[str]:
        if operand.type == ATTRIBUTE:
            return attribute_text(operand.expression)
        return operand.expression

    def _typeof(self, element: Any) -> tuple[ColumnElement[str], dict[str, tuple[str, ...]]]:
        """The SQL naming the JSON type of ``element``, and the names it uses per kind."""
        if self.source.dialect not in _JSON_TYPEOF:
            raise ValueError(f"no JSON attribute support for dialect {self.source.dialect!r}")
        typeof, names = _JSON_TYPEOF[self.source.dialect]
        return typeof(element), names

    def _nullness(self, operand: _Operand, null: bool) -> ColumnElement[bool]:
        """IS NULL (or IS NOT NULL); for attributes, a key absent or JSON null counts as null."""
        if operand.type == ATTRIBUTE:
            kind = func.coalesce(self._typeof(operand.expression)[0], "null")
            return kind == "null" if null else kind != "null"
        return operand.expression.is_(None) if null else operand.expression.is_not(None)

    def _typed(self, operand: _Operand, lit: _Literal) -> tuple[ColumnElement[Any], Any, str]:
        """The expression to compare, the value to bind, and a group key for ``in`` lists."""
        kind, field_type, expression = lit.kind, operand.type, operand.expression
        if field_type == ATTRIBUTE and kind in ("number", "bool"):
            # The value only where the key holds JSON of that kind, else NULL: no cast errors.
            typeof, names = self._typeof(expression)
            value = expression.as_float() if kind == "number" else expression.as_boolean()
            bound = float(lit.value) if kind == "number" else lit.value
            return case((typeof.in_(names[kind]), value)), bound, kind
        if field_type == ATTRIBUTE:
            return attribute_text(expression), lit.value if kind == "string" else lit.text, "text"
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
            if field_type == "date" and type(value) is date:
                return expression, value, field_type
            if field_type == "datetime" and isinstance(value, datetime):
                return expression, value, field_type
            if field_type == "datetime" and value is not None:
                return expression, datetime.combine(value, time(), UTC), field_type
        raise FilterError(f"Cannot compare {field_type} field '{operand.name}' with {kind} "
                          f"{lit.text}", lit.position)

    def comparison(self, operand: _Operand, op: str, op_position: int, lit: _Literal,
                   negate: bool) -> ColumnElement[bool]:
        op = op.lower()
        if lit.kind == "null":
            if op not in ("eq", "ne"):
                raise FilterError(f"null can only be compared with eq or ne, not '{op}'",
                                  op_position)
            return self._nullness(operand, (op == "eq") != negate)
        expression, value, _ = self._typed(operand, lit)
        if lit.kind == "bool" and op not in ("eq", "ne"):
            raise FilterError(f"Booleans can only be compared with eq or ne, not '{op}'",
                              op_position)
        if op == "ne":
            op, negate = "eq", not negate
        if not negate:
            return _OPERATORS[op](expression, value)
        return _or_null(_OPERATORS[_INVERSE[op]](expression, value), expression,
                        operand.nullable)

    def _compare(self, node: Tree, negate: bool, depth: int) -> ColumnElement[bool]:
        operand_node, op, value = node.children
        return self.comparison(self.operand(operand_node, depth), op, op.start_pos,
                               self.literal(value), negate)

    def _bool_test(self, node: Tree, negate: bool, depth: int) -> ColumnElement[bool]:
        operand = self.operand(node.children[0], depth)
        if operand.type not in ("bool", ATTRIBUTE):
            raise FilterError(f"Expected an operator after '{operand.name}'", node.meta.end_pos)
        return self.comparison(operand, "eq", operand.position,
                               _Literal("bool", True, "true", operand.position), negate)

    def _template(self, node: Tree, negate: bool, depth: int) -> ColumnElement[bool]:
        operand_node, token = node.children
        name = self.literal(token).value
        if name.lower() != "!me":
            raise FilterError(f"Unknown template '{name}'", token.start_pos)
        if self.user_id is None:
            raise FilterError("Template '!me' needs a signed-in user", token.start_pos)
        lit = _Literal("string", self.user_id, str(token), token.start_pos)
        return self.comparison(self.operand(operand_node, depth), "eq", token.start_pos, lit,
                               negate)

    def _in_list(self, node: Tree, negate: bool, depth: int) -> ColumnElement[bool]:
        operand_node, word, values = node.children
        operand = self.operand(operand_node, depth)
        negate = negate != (word.lower() == "not_in")
        literals = [self.literal(token) for token in values.children]
        groups: dict[str, tuple[ColumnElement[Any], list[Any]]] = {}
        for lit in literals:
            if lit.kind != "null":
                expression, value, key = self._typed(operand, lit)
                groups.setdefault(key, (expression, []))[1].append(value)
        has_null = any(lit.kind == "null" for lit in literals)
        if negate:
            parts = [_or_null(expression.not_in(group), expression, operand.nullable)
                     for expression, group in groups.values()]
            return and_(*parts, *([self._nullness(operand, False)] if has_null else []))
        parts = [expression.in_(group) for expression, group in groups.values()]
        return or_(*parts, *([self._nullness(operand, True)] if has_null else []))

    def _postfix(self, node: Tree, negate: bool, depth: int) -> ColumnElement[bool]:
        operand_node, word = node.children
        operand = self.operand(operand_node, depth)
        word = word.lower()
        null = (word in ("isnull", "isempty")) != negate
        if word in ("isnull", "isnotnull") or (
                operand.type not in TEXT_TYPES and operand.type != ATTRIBUTE):
            return self._nullness(operand, null)
        text = self._text(operand)
        if null:
            return or_(self._nullness(operand, True), text == "")
        return and_(self._nullness(operand, False), text != "")

    def _match(self, node: Tree, negate: bool, depth: int) -> ColumnElement[bool]:
        function, operand_node, value = node.children
        operand = self.operand(operand_node, depth)
        self._require_text(operand, f"{function.lower()}()")
        lit = self.literal(value)
        if lit.kind != "string":
            raise FilterError(f"{function.lower()}() needs a quoted string, not {lit.text}",
                              lit.position)
        escaped = re.sub(r"[/%_]", lambda match: "/" + match.group(), lit.value)
        pattern = func.lower(literal(_PATTERNS[function.lower()].format(escaped), String()))
        text = func.lower(self._text(operand))
        if not negate:
            return text.like(pattern, escape="/")
        return _or_null(text.not_like(pattern, escape="/"), text, operand.nullable)

    def _match_compare(self, node: Tree, negate: bool, depth: int) -> ColumnElement[bool]:
        *call, op, value = node.children
        lit = self.literal(value)
        if op.lower() not in ("eq", "ne") or lit.kind != "bool":
            raise FilterError(f"{call[0].lower()}() can only be compared with eq/ne true/false",
                              op.start_pos)
        flip = (op.lower() == "ne") != (not lit.value)
        return self._match(Tree("match", call, node.meta), negate != flip, depth)
