"""The other OData query options: ``$orderby``, ``$select``, ``$top``/``$skip`` and the page.

They resolve names exactly as ``$filter`` does (:func:`labapp.query.fields.resolve_field`):
case-insensitive, whitelisted by the field source, ``attributes.key`` for free attributes.
"""
from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement

from labapp.errors import InvalidInput
from labapp.query.fields import (
    ATTRIBUTE,
    FieldSource,
    FilterField,
    UnknownField,
    attribute_text,
    resolve_field,
)

PAGE_SIZE = 500
MAX_SKIP = 10 ** 15
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[./][A-Za-z0-9_-]+)*")  # as FIELD in grammar.lark
_COUNT = re.compile(r"\d+")


def _invalid(option: str, code: str, message: str) -> InvalidInput:
    return InvalidInput(message, code=code, errors=[{"field": option, "message": message}])


def _items(text: str) -> Iterator[tuple[int, str]]:
    """The comma-separated items of ``text``, stripped, each with its 0-based position."""
    offset = 0
    for part in text.split(","):
        yield offset + len(part) - len(part.lstrip()), part.strip()
        offset += len(part) + 1


def _resolve(source: FieldSource, name: str, position: int, option: str,
             code: str) -> FilterField:
    if not name:
        raise _invalid(option, code, f"Empty item in {option} at position {position}")
    if not _NAME.fullmatch(name):
        raise _invalid(option, code, f"Invalid field name '{name}' at position {position}")
    try:
        return resolve_field(source, name)
    except UnknownField as error:
        raise _invalid(option, code, f"{error} at position {position}") from None


def parse_sort_keys(text: str | None, source: FieldSource) -> list[tuple[FilterField, bool]]:
    """The fields of ``$orderby`` (``name desc, createdUtc``), each with ``descending``.

    Raises InvalidInput ``invalid_orderby`` (unknown field, JSON field, bad direction).
    """
    keys: list[tuple[FilterField, bool]] = []
    for position, item in _items(text) if text and text.strip() else ():
        parts = item.split()
        if len(parts) > 2 or (len(parts) == 2 and parts[1].lower() not in ("asc", "desc")):
            raise _invalid("$orderby", "invalid_orderby",
                           f"Expected 'field [asc|desc]', not '{item}' at position {position}")
        field = _resolve(source, parts[0] if parts else "", position, "$orderby",
                         "invalid_orderby")
        if field.type == "json":
            raise _invalid("$orderby", "invalid_orderby",
                           f"Cannot order by JSON field '{field.name}' at position {position}")
        keys.append((field, len(parts) == 2 and parts[1].lower() == "desc"))
    return keys


def parse_orderby(text: str | None, source: FieldSource,
                  tiebreaker: ColumnElement[Any]) -> list[ColumnElement[Any]]:
    """ORDER BY clauses for ``$orderby`` (``name desc, createdUtc``), then ``tiebreaker``.

    Attributes sort as text. Missing values sort as the largest (last ascending, first
    descending) on both databases. Raises InvalidInput ``invalid_orderby``.
    """
    clauses = [sort_clause(field, descending)
               for field, descending in parse_sort_keys(text, source)]
    return [*clauses, tiebreaker]


def sort_expression(field: FilterField) -> ColumnElement[Any]:
    """What a resolved (non-JSON) field sorts by: its expression, attributes as text."""
    return (attribute_text(field.expression) if field.type == ATTRIBUTE
            else field.expression)


def sort_clause(field: FilterField, descending: bool) -> ColumnElement[Any]:
    """The ORDER BY clause of one resolved (non-JSON) field, as ``$orderby`` sorts.

    Attributes sort as text. Missing values sort as the largest (last ascending, first
    descending) on both databases.
    """
    expression = sort_expression(field)
    return expression.desc().nulls_first() if descending else expression.asc().nulls_last()


def parse_select(text: str | None, source: FieldSource,
                 always: Sequence[str] = ("id", "eClass")) -> list[str]:
    """Canonical names for ``$select``, ``always`` first, without duplicates.

    ``attributes`` selects every attribute and ``attributes.key`` (or ``attributes/key``)
    one of them, returned as ``attributes.key``. An empty ``$select`` (or ``*``) gives
    ``[]``: every field. Raises InvalidInput ``invalid_select``.
    """
    if text is None or not text.strip() or text.strip() == "*":
        return []
    names = list(always)
    for position, item in _items(text):
        name = _resolve(source, item, position, "$select", "invalid_select").name
        if name not in names:
            names.append(name)
    return names


def paging_value(option: str, raw: str | int) -> int:
    """The value of ``$top`` or ``$skip`` (named by ``option``): a non-negative integer up to
    :data:`MAX_SKIP`. Raises InvalidInput ``invalid_paging`` naming the option."""
    text = str(raw).strip()
    if isinstance(raw, bool) or not _COUNT.fullmatch(text):
        raise _invalid(option, "invalid_paging",
                       f"{option} must be a non-negative integer, not '{raw}'")
    value = int(text)
    if value > MAX_SKIP:
        raise _invalid(option, "invalid_paging", f"{option} is too large")
    return value


def _count(option: str, raw: str | int | None, default: int) -> int:
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return default
    return paging_value(option, raw)


def count_value(raw: str | None, default: bool, code: str = "invalid_count") -> bool:
    """The value of ``$count``: ``true`` or ``false`` (any case), ``default`` when absent.
    Raises InvalidInput ``code`` naming ``$count``."""
    if raw is None or not raw.strip():
        return default
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise _invalid("$count", code, f"$count must be true or false, not '{raw}'")
    return value == "true"


def parse_paging(top: str | int | None, skip: str | int | None,
                 max_top: int = PAGE_SIZE) -> tuple[int, int]:
    """``(limit, offset)`` from ``$top`` and ``$skip``; ``$top`` is capped at ``max_top``.

    Absent values give ``(max_top, 0)``. Raises InvalidInput ``invalid_paging`` for negative
    or non-numeric values.
    """
    return min(_count("$top", top, max_top), max_top), _count("$skip", skip, 0)


@dataclass(frozen=True)
class Page:
    """One page of a listing. ``nextSkip`` is ``skip + size`` always, also on the last page;
    ``next_token`` is the keyset position after the page's last row when more rows follow
    (listings that page by keyset: :mod:`labapp.query.paging`)."""

    data: list[Any]
    total: int | None  # None: not counted (``$count=false``)
    skip: int
    size: int = PAGE_SIZE
    next_token: str | None = None

    @property
    def next_skip(self) -> int:
        """The ``$skip`` of the next page (decisions §6)."""
        return self.skip + self.size

    def to_json(self) -> dict[str, Any]:
        """``{data, total, nextSkip}`` as the API answers a listing."""
        return {"data": self.data, "total": self.total, "nextSkip": self.next_skip}

    def to_keyset_json(self) -> dict[str, Any]:
        """:meth:`to_json` and ``nextSkipToken`` (null on the last page), as the entity list
        answers."""
        return {**self.to_json(), "nextSkipToken": self.next_token}
