"""One page of an OData feed, read and written as a stream (decisions §13).

:func:`open_feed` resolves the options against the view (the one ``$filter`` parser, the
view's row-level security and column guards of :mod:`labapp.query.dbviews`) and builds the
statement (and the ``$count``), so every error of the request's own making is raised before
the response starts. :meth:`Feed.chunks` then runs the count and the query in one snapshot
and writes the JSON page while the rows arrive from a server-side cursor: one page is never
held in memory, nor is the whole feed.

The query runs inside the streamed body, not in the view: Flask tears the view's app context
down (and with it the database session and any open cursor) before the body is iterated;
``stream_with_context`` pushes the context again for the body, with a session of its own that
is closed when the body ends. A database failure after the first chunk can only cut the body
short (the client sees incomplete JSON); it is logged.

A page holds at most ``page_size`` rows; when more follow it ends with an
``@odata.nextLink`` carrying a ``$skiptoken`` keyset position
(:mod:`labapp.query.paging`). ``$skip`` applies to the first page only and ``$top`` bounds
the whole feed, as the standard says: the next link carries what remains of it.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from functools import partial
from itertools import islice
from typing import Any
from urllib.parse import urlencode

from sqlalchemy import ColumnElement, Select, Text, select, text, type_coerce
from sqlalchemy.sql.elements import UnaryExpression
from sqlalchemy.sql.operators import custom_op

from labapp.access.actor import Actor
from labapp.access.visibility import readable
from labapp.db import db, snapshots
from labapp.jsonprovider import format_utc
from labapp.odata.options import FeedOptions, invalid
from labapp.query import paging
from labapp.query.dbviews import ViewSpec
from labapp.query.filter import compile_filter
from labapp.query.listing import parse_select, parse_sort_keys, sort_clause, sort_expression
from labapp.query.rows import Target, count_rows, view_target

log = logging.getLogger(__name__)

STREAM_BATCH = 200  # rows per chunk handed to the server
YIELD_PER = 500  # rows per fetch from the database cursor
_ZERO = timedelta(0)
# PostgreSQL, a page after a keyset position in id order: a view joins its class table to
# ``entity`` on id, and the bound ``id > :token`` reaches only entity's index. A merge join
# then reads the class table's index from its start up to the position (the hundredth page
# of 100,000 rows paid ~25 ms more than the first); a nested loop from the position is
# flat. Set for the page's own transaction only (SET LOCAL).
KEYSET_PLANNER = ("SET LOCAL enable_mergejoin = off", "SET LOCAL enable_hashjoin = off")


def _datetime(value: datetime | None) -> str | None:
    """As :func:`labapp.jsonprovider.format_utc` (UTC, milliseconds, ``Z``), the fast way:
    the database hands back UTC-aware values."""
    if value is None:
        return None
    if value.utcoffset() != _ZERO:
        return format_utc(value)
    return value.replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"


def _date(value: date | None) -> str | None:
    return None if value is None else value.isoformat()


_CONVERTERS: dict[str, Callable[[Any], Any]] = {"datetime": _datetime, "date": _date}


@dataclass
class Feed:
    """One page of a feed, ready to run: its query, how its values are written, and what
    the page says around the rows (count, next link)."""

    view: ViewSpec
    names: list[str]
    converters: list[Callable[[Any], Any] | None]
    statement: Select[Any]
    page_size: int
    fingerprint: str
    options: FeedOptions
    counting: Callable[[], int] | None = None  # ``$count``, read with the rows
    planner: tuple[str, ...] = ()
    next_token: str | None = field(default=None, init=False)
    written: int = field(default=0, init=False)

    def _records(self, rows: Iterator[Any]) -> Iterator[dict[str, Any]]:
        """Each row as a dict of OData JSON values; stops at the page size and records the
        next token."""
        width = len(self.names)
        limit = self._page_limit()
        last: Any = None
        for row in rows:
            if self.written == limit:
                self.next_token = paging.encode(self.fingerprint, last[width:])
                break
            values = [value if convert is None else convert(value)
                      for value, convert in zip(row[:width], self.converters, strict=True)]
            yield dict(zip(self.names, values, strict=True))
            self.written += 1
            last = row

    def _batches(self, rows: Iterator[Any]) -> Iterator[str]:
        """The JSON objects of :data:`STREAM_BATCH` rows at a time, comma-separated."""
        dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
        records = self._records(rows)
        while batch := list(islice(records, STREAM_BATCH)):
            yield dumps(batch)[1:-1]

    def _execute(self, **options: Any) -> Any:
        for setting in self.planner:
            db.session.execute(text(setting))
        return db.session.execute(self.statement, execution_options=options)

    def read(self) -> list[dict[str, Any]]:
        """The whole page as a list (for small pages: the Data feeds preview)."""
        result = self._execute()
        try:
            return list(self._records(iter(result)))
        finally:
            result.close()

    def _page_limit(self) -> int:
        top = self.options.top
        return self.page_size if top is None else min(self.page_size, top)

    def chunks(self, context_url: str, next_base: str) -> Iterator[str]:
        """The page as JSON text, chunk by chunk, as the rows are read (see the module
        docstring); the database result is closed at the end. ``$count`` and the rows are
        read in the body's own transaction, begun as one snapshot (PostgreSQL: REPEATABLE
        READ), so the count and the rows agree."""
        result = None
        try:
            with snapshots(reading=True):
                count = self.counting() if self.counting is not None else None
                result = self._execute(yield_per=YIELD_PER)
            head: dict[str, Any] = {"@odata.context": context_url}
            if count is not None:
                head["@odata.count"] = count
            yield json.dumps(head)[:-1] + ',"value":['
            first = True
            for batch in self._batches(iter(result)):
                yield batch if first else "," + batch
                first = False
            tail = "]"
            if self.next_token is not None:
                tail += ',"@odata.nextLink":' + json.dumps(self.next_link(next_base))
            yield tail + "}"
        except Exception:
            log.exception("OData feed %s failed after its response started", self.view.name)
            raise
        finally:
            if result is not None:
                result.close()

    def next_link(self, base: str) -> str:
        """The URL of the next page: the same options, the keyset token, what is left of
        ``$top``; never ``$skip``."""
        options = self.options
        query = {name: value for name, value in (("$filter", options.filter),
                                                 ("$select", options.select),
                                                 ("$orderby", options.orderby))
                 if value is not None}
        if options.count:
            query["$count"] = "true"
        if options.top is not None:
            query["$top"] = str(options.top - self.written)
        query["$skiptoken"] = self.next_token or ""
        return f"{base}?{urlencode(query, safe='$,/')}"


class _Unindexed:
    """A view's columns behind SQLite's unary ``+``, for the visibility predicate only.

    By ``id`` (the default order), the cheapest plan walks the primary key from the keyset
    position and stops after a page. SQLite prefers the department/eclass indexes for the
    visibility predicate instead, then sorts every remaining visible row to return a page:
    each page then costs in proportion to the rows after it. ``+column`` is SQLite's way to
    keep a term from using an index; the predicate's meaning is unchanged.
    """

    def __init__(self, columns: Any) -> None:
        self._columns = columns

    def __getattr__(self, name: str) -> ColumnElement[Any]:
        column = self._columns[name]
        return UnaryExpression(column, operator=custom_op("+"), type_=column.type)


def _names(target: Target, view: ViewSpec, text: str | None) -> list[str]:
    names = parse_select(text, target.source, always=())
    for name in names:
        if "." in name:
            raise invalid("$select", f"$select takes properties of {view.name}; "
                                     f"'{name}' is not one (select attributes instead)",
                          "invalid_select")
    return names or [column.name for column in view.columns]


def open_feed(actor: Actor, view: ViewSpec, options: FeedOptions, *,
              page_size: int) -> Feed:
    """Resolve ``options`` on ``view`` for ``actor`` and build the page's query.

    Raises InvalidInput (400) for a bad option; nothing is written before that.
    """
    target = view_target(actor, view)
    condition = compile_filter(options.filter, target.source, user_id=actor.user_id)
    names = _names(target, view, options.select)
    fields = parse_sort_keys(options.orderby, target.source)
    keys = [paging.SortKey(sort_expression(f), descending) for f, descending in fields]
    keys.append(paging.SortKey(target.key, False, nullable=False))
    order = [sort_clause(f, descending) for f, descending in fields] + [target.key.asc()]
    fingerprint = paging.fingerprint(view.name, ",".join(
        f"{f.name} {'desc' if descending else 'asc'}" for f, descending in fields))
    visible = target.visible
    planner: tuple[str, ...] = ()
    if target.source.dialect == "sqlite" and not fields:
        visible = readable(actor, _Unindexed(target.origin.c))
    if target.source.dialect == "postgresql" and not fields and options.skiptoken is not None:
        planner = KEYSET_PLANNER
    where = [visible, condition]
    if options.skiptoken is not None:
        values = paging.decode(options.skiptoken, fingerprint, len(keys))
        where.append(paging.after(keys, values))
    limit = page_size if options.top is None else min(page_size, options.top)
    more = options.top is None or options.top > limit
    types = {column.name: column.type for column in view.columns}
    # ``attributes`` is JSON text in the view: served as that text, never parsed and re-dumped.
    columns = [type_coerce(target.columns[name], Text) if types[name] == "json"
               else target.columns[name] for name in names]
    statement = (select(*columns,
                        *(key.expression for key in keys))
                 .select_from(target.origin).where(*where).order_by(*order)
                 .limit(limit + 1 if more else limit))
    if options.skiptoken is None and options.skip:
        statement = statement.offset(options.skip)
    return Feed(view=view, names=names,
                converters=[_CONVERTERS.get(types[name]) for name in names],
                statement=statement, page_size=page_size, fingerprint=fingerprint,
                options=options, planner=planner,
                counting=partial(count_rows, target, condition) if options.count else None)


def count_matching(actor: Actor, view: ViewSpec, options: FeedOptions) -> int:
    """How many rows of ``view`` the actor may read match ``options.filter``."""
    target = view_target(actor, view)
    return count_rows(target, compile_filter(options.filter, target.source,
                                             user_id=actor.user_id))
