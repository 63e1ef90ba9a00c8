"""``$skiptoken``: the keyset position of a page, for the OData feed (decisions §13) and the
entity list (``nextSkipToken``).

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

from sqlalchemy import ColumnElement, SQLColumnExpression, and_, false, not_, or_, true

from labapp.errors import InvalidInput
from labapp.query.fields import FilterField
from labapp.query.listing import sort_clause, sort_expression

INVALID_SKIPTOKEN = "invalid_skiptoken"  # the problem code of a token that is not the view's


@dataclass(frozen=True)
class SortKey:
    """One key of the order: the SQL it sorts by, its direction, and whether it can be null
    (the ``id`` that ends every order cannot, which keeps its condition index-friendly)."""

    expression: SQLColumnExpression[Any]
    descending: bool
    nullable: bool = True


def _invalid(message: str) -> InvalidInput:
    return InvalidInput(message, code=INVALID_SKIPTOKEN,
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
        raise _invalid("The $skiptoken is malformed; pass it on as a page gave it.") \
            from None
    if owner != fingerprint_ or len(values) != keys:
        raise _invalid("The $skiptoken belongs to another class, view or $orderby; "
                       "pass it on with the options of the page that gave it.")
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


def _bound(key: SortKey, value: Any) -> ColumnElement[bool] | None:
    """The rows from ``value`` on in ``key`` (those equal to it included) as one range an
    index can seek to, when there is one."""
    if value is None:
        return None if key.descending else key.expression.is_(None)
    if key.descending:  # nulls came first, the rest is at most ``value``
        below: ColumnElement[bool] = key.expression <= value
        return below
    if key.nullable:  # the nulls that end the order follow too: no one range
        return None
    above: ColumnElement[bool] = key.expression >= value
    return above


def _branches(keys: Sequence[SortKey], values: Sequence[Any]) -> ColumnElement[bool]:
    """For some key, every earlier key equal and this one after."""
    branches = []
    for index, key in enumerate(keys):
        equal = [_same(earlier, value) for earlier, value in zip(keys[:index], values[:index],
                                                                 strict=True)]
        branches.append(and_(*equal, _after(key, values[index])))
    return or_(*branches) if branches else true()


def after(keys: Sequence[SortKey], values: Sequence[Any]) -> ColumnElement[bool]:
    """The rows sorted after the row with ``values``.

    When the first key's remaining range is one index range, it leads: ``first in range
    and not (first equal and the other keys not after)``. Spelled as an OR of branches, the
    start of the range hides from both planners (they walk the index from its beginning),
    and a range added to the OR is counted twice by PostgreSQL's estimate, which then
    sorts every remaining row. A NULL where the other keys' answer is false still drops
    the row, and they never answer NULL for a row that is after.
    """
    bound = _bound(keys[0], values[0]) if len(keys) > 1 else None
    if bound is None:
        return _branches(keys, values)
    return and_(bound, not_(and_(_same(keys[0], values[0]),
                                 not_(_branches(keys[1:], values[1:])))))


@dataclass(frozen=True)
class Keyset:
    """The order of one listing as keyset paging sees it: the sort keys (the ``$orderby``
    fields, then the unique ``key`` column), the ORDER BY they make, and the fingerprint
    its tokens carry."""

    keys: tuple[SortKey, ...]
    order: tuple[SQLColumnExpression[Any], ...]
    fingerprint: str

    @classmethod
    def of(cls, owner: str, fields: Sequence[tuple[FilterField, bool]],
           key: SQLColumnExpression[Any], key_name: str = "id") -> Keyset:
        """The keyset of ``owner`` (what tokens are bound to, with the order) ordered by
        ``fields`` (as :func:`labapp.query.listing.parse_sort_keys` resolves them), then
        by ``key`` (the field ``key_name``) unless they name it: the order is then total."""
        names = [field.name for field, _descending in fields]
        if key_name in names:
            fields = fields[:names.index(key_name) + 1]
        keys = [SortKey(sort_expression(field), descending, field.nullable)
                for field, descending in fields]
        order: list[SQLColumnExpression[Any]] = [sort_clause(field, descending)
                                                 for field, descending in fields]
        if key_name not in names:
            keys.append(SortKey(key, False, nullable=False))
            order.append(key.asc())
        return cls(tuple(keys), tuple(order), fingerprint(owner, ",".join(
            f"{field.name} {'desc' if descending else 'asc'}" for field, descending in fields)))

    @property
    def expressions(self) -> list[SQLColumnExpression[Any]]:
        """The sort keys' expressions, to select after a page's columns."""
        return [key.expression for key in self.keys]

    def decode(self, token: str) -> list[Any]:
        """The position ``token`` holds; 400 ``invalid_skiptoken`` when it is not one of
        this keyset's."""
        return decode(token, self.fingerprint, len(self.keys))

    def encode(self, values: Sequence[Any]) -> str:
        """The token of the row whose sort-key values are ``values``."""
        return encode(self.fingerprint, values)

    def after(self, values: Sequence[Any]) -> ColumnElement[bool]:
        """The rows sorted after ``values`` (:func:`after`)."""
        return after(self.keys, values)
