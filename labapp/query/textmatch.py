"""Case-insensitive text matching that both databases evaluate alike, and can index.

Matches ignore the case of ASCII letters only, on both databases: SQLite's ``lower`` and
``LIKE`` fold exactly those, and PostgreSQL's ``lower()`` does the same under the ``C``
collation (at half the cost of a locale-aware ``ILIKE``). ``%`` and ``_`` in a query are taken
literally. The suggestion-indexes migration indexes :func:`folded` of id, name and barcode.
"""
from __future__ import annotations

import re
from typing import Any

from sqlalchemy import ColumnElement, String, and_, func, literal

from labapp.db import db

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_LAST_CODE_POINT = 0x10FFFF
_SURROGATES = range(0xD800, 0xE000)


def _postgresql() -> bool:
    return db.engine.dialect.name == "postgresql"


def fold(text: str) -> str:
    """``text`` with its ASCII letters in lower case: what :func:`folded` makes of it in SQL."""
    return text.translate(_ASCII_LOWER)


def folded(column: ColumnElement[Any]) -> ColumnElement[str]:
    """``column`` with its ASCII letters in lower case, compared in byte (code point) order."""
    return func.lower(column.collate("C")) if _postgresql() else func.lower(column)


def like_pattern(query: str, template: str) -> str:
    """``template`` (``{}``, ``{}%``, ``%{}%``) around ``query``, whose wildcards are escaped
    with ``/`` (the ``ESCAPE`` character)."""
    return template.format(re.sub(r"[/%_]", lambda match: "/" + match.group(), query))


def matches(column: ColumnElement[Any], query: str, template: str) -> ColumnElement[bool]:
    """``column`` matches ``template`` (``{}``, ``{}%``, ``%{}%``) around ``query``, ignoring
    the case of ASCII letters, with the wildcards of ``query`` escaped."""
    pattern = literal(like_pattern(query, template), String())
    if _postgresql():
        return folded(column).like(func.lower(pattern.collate("C")), escape="/")
    return column.like(pattern, escape="/")


def _successor(text: str) -> str | None:
    """The least string greater than every string starting with ``text`` (code point order),
    or None when there is none."""
    while text:
        code = ord(text[-1]) + 1
        if code in _SURROGATES:
            code = _SURROGATES.stop
        if code <= _LAST_CODE_POINT:
            return text[:-1] + chr(code)
        text = text[:-1]
    return None


def starts_with(folded_column: ColumnElement[str], prefix: str) -> ColumnElement[bool]:
    """``folded_column`` (a :func:`folded` expression) starts with ``fold(prefix)``, as a range
    that an index on the expression serves on both databases."""
    low = fold(prefix)
    high = _successor(low)
    lower_bound = folded_column >= literal(low, String())
    return lower_bound if high is None else and_(lower_bound,
                                                 folded_column < literal(high, String()))
