"""Case-insensitive text matching that both databases evaluate alike, and can index.

Matches ignore the case of ASCII letters only, on both databases: SQLite's ``lower`` and
``LIKE`` fold exactly those, and PostgreSQL's ``lower()`` does the same under the ``C``
collation (at half the cost of a locale-aware ``ILIKE``). ``%`` and ``_`` in a query are taken
literally. The suggestion-indexes migration indexes :func:`folded` of id, name and barcode.
"""
from __future__ import annotations

import re
import weakref
from typing import Any

from sqlalchemy import ColumnElement, Engine, String, and_, func, literal, text

from labapp.db import db

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_ASCII_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
# Default collations of PostgreSQL's libc provider that compare strings by code point.
_CODE_POINT_COLLATIONS = frozenset({"c", "posix", "c.utf-8", "c.utf8"})
_code_point_order: weakref.WeakKeyDictionary[Engine, bool] = weakref.WeakKeyDictionary()
_LAST_CODE_POINT = 0x10FFFF
_SURROGATES = range(0xD800, 0xE000)


def _postgresql() -> bool:
    return db.engine.dialect.name == "postgresql"


def fold(text: str) -> str:
    """``text`` with its ASCII letters in lower case: what :func:`folded` makes of it in SQL."""
    return text.translate(_ASCII_LOWER)


def folded(column: ColumnElement[Any], dialect: str | None = None) -> ColumnElement[str]:
    """``column`` with its ASCII letters in lower case, compared in byte (code point) order
    (``dialect``, ``sqlite`` or ``postgresql``, defaults to the application's database)."""
    postgresql = _postgresql() if dialect is None else dialect == "postgresql"
    return func.lower(column.collate("C")) if postgresql else func.lower(column)


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


def code_point_order(dialect: str) -> bool:
    """Whether text columns without a collation of their own sort by code point: always on
    SQLite (``BINARY``); on PostgreSQL when the database's default collation is ``C``,
    ``POSIX`` or ``C.UTF-8`` of the libc provider (asked once per engine)."""
    if dialect != "postgresql":
        return True
    engine = db.engine
    if engine not in _code_point_order:
        with engine.connect() as connection:
            provider, collation = connection.execute(text(
                "SELECT datlocprovider, datcollate FROM pg_database "
                "WHERE datname = current_database()")).one()
        _code_point_order[engine] = (provider == "c"
                                     and collation.lower() in _CODE_POINT_COLLATIONS)
    return _code_point_order[engine]


def prefix_bounds(column: ColumnElement[Any], prefix: str) -> list[ColumnElement[bool]]:
    """Bounds on ``column`` that every value starting with ``prefix`` (ASCII case ignored)
    lies within, when the column sorts by code point (:func:`code_point_order`): from the
    prefix in upper case (upper-case ASCII sorts first) to the successor of it in lower
    case. Implied by the match, they let an ordered walk of the column's index start at the
    prefix instead of reading every row before it (bench/runs/2026-11-25-million.md)."""
    high = _successor(fold(prefix))
    bounds = [column >= literal(prefix.translate(_ASCII_UPPER), String())]
    return bounds if high is None else [*bounds, column < literal(high, String())]


def starts_with(folded_column: ColumnElement[str], prefix: str) -> ColumnElement[bool]:
    """``folded_column`` (a :func:`folded` expression) starts with ``fold(prefix)``, as a range
    that an index on the expression serves on both databases."""
    low = fold(prefix)
    high = _successor(low)
    lower_bound = folded_column >= literal(low, String())
    return lower_bound if high is None else and_(lower_bound,
                                                 folded_column < literal(high, String()))
