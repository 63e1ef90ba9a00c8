"""``$skiptoken``: the keyset position of a server-driven page (decisions §13).

A page ends after some row; the next page starts with the rows sorted after it. The token
holds that row's sort-key values (every ``$orderby`` key, then ``id``, which makes the order
total) and a fingerprint of the view and order it belongs to, so a token is never read
against another order. The next page is a plain ``WHERE (keys) > (values)`` on the same
ORDER BY, spelled out for mixed directions and nulls, so the hundredth page costs what the
first does — no OFFSET.

Nulls sort as the largest value (last ascending, first descending), exactly as
:func:`labapp.query.listing.sort_clause` orders them.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from sqlalchemy import ColumnElement, SQLColumnExpression, and_, false, or_, true

from labapp.errors import InvalidInput


@dataclass(frozen=True)
class SortKey:
    """One key of the order: the SQL it sorts by, its direction, and whether it can be null
    (the ``id`` that ends every order cannot, which keeps its condition index-friendly)."""

    expression: SQLColumnExpression[Any]
    descending: bool
    nullable: bool = True


def _invalid(message: str) -> InvalidInput:
    return InvalidInput(message, code="invalid_skiptoken",
                        errors=[{"field": "$skiptoken", "message": message}])


def fingerprint(view: str, order: str) -> str:
    """A short digest of the view and the normalised ``$orderby`` a token belongs to."""
    return hashlib.sha256(f"{view}\n{order}".encode()).hexdigest()[:12]


def _tagged(value: Any) -> list[Any]:
    if value is None:
        return ["n", None]
    if isinstance(value, bool):
        return ["b", value]
    if isinstance(value, int):
        return ["i", value]
    if isinstance(value, float):
        return ["f", value]
    if isinstance(value, datetime):
        return ["t", value.isoformat()]
    if isinstance(value, date):
        return ["d", value.isoformat()]
    return ["s", str(value)]


_UNTAG: dict[str, Callable[[Any], Any]] = {
    "n": lambda raw: None, "b": bool, "i": int, "f": float, "s": str,
    "t": datetime.fromisoformat, "d": date.fromisoformat}


def encode(fingerprint_: str, values: Sequence[Any]) -> str:
    """The token of the row whose sort-key values are ``values``."""
    document = json.dumps([fingerprint_, [_tagged(value) for value in values]],
                          separators=(",", ":"))
    return base64.urlsafe_b64encode(document.encode()).decode().rstrip("=")


def decode(token: str, fingerprint_: str, keys: int) -> list[Any]:
    """The sort-key values of ``token``; 400 ``invalid_skiptoken`` when it is not one of
    this view and order's tokens."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        owner, tagged = json.loads(raw)
        values = [_UNTAG[tag](value) for tag, value in tagged]
    except (binascii.Error, UnicodeDecodeError, ValueError, TypeError, KeyError):
        raise _invalid("The $skiptoken is malformed; use the @odata.nextLink as given.") \
            from None
    if owner != fingerprint_ or len(values) != keys:
        raise _invalid("The $skiptoken belongs to another view or $orderby; use the "
                       "@odata.nextLink as given.")
    return values


def _after(key: SortKey, value: Any) -> ColumnElement[bool]:
    """The rows whose ``key`` sorts strictly after ``value``."""
    expression = key.expression
    if key.descending:  # nulls first, then largest to smallest
        return expression.is_not(None) if value is None else expression < value
    if value is None:  # ascending, nulls last: nothing comes after a null
        return false()
    return or_(expression > value, expression.is_(None)) if key.nullable \
        else expression > value


def _same(key: SortKey, value: Any) -> ColumnElement[bool]:
    return key.expression.is_(None) if value is None else key.expression == value


def after(keys: Sequence[SortKey], values: Sequence[Any]) -> ColumnElement[bool]:
    """The rows sorted after the row with ``values``: for some key, every earlier key equal
    and this one after."""
    branches = []
    for index, key in enumerate(keys):
        equal = [_same(earlier, value) for earlier, value in zip(keys[:index], values[:index],
                                                                 strict=True)]
        branches.append(and_(*equal, _after(key, values[index])))
    return or_(*branches) if branches else true()
