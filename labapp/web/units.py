"""Each route declares once whether it reads or writes; its view runs in units of that kind.

A GET or HEAD route reads and any other method writes, unless the view says otherwise with
:func:`reads` (a POST that only queries, such as ``/api/query/dataset``) or :func:`writes`
(a GET that changes something, such as ``/api/notification/markAllAsSeen``). The application
class decides it once per request, around the view only (:class:`LabFlask`): inside a reading
view every :func:`labapp.db.transaction` is a read unit — one snapshot, no write lock, any
write refused — and inside a writing view a write unit (SQLite: ``BEGIN IMMEDIATE``).

What runs around the view is not the route's work and keeps writing units: authentication's
bookkeeping (a failed attempt, a PAT's last use), the search queue drained after a commit or
at start-up, error handlers.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Literal, TypeVar

from flask import Flask, Request, request
from flask.typing import ResponseReturnValue

from labapp.db import units

ViewT = TypeVar("ViewT", bound=Callable[..., object])
Unit = Literal["read", "write"]
UNIT_ATTRIBUTE = "labapp_unit"
READING_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def reads(view: ViewT) -> ViewT:
    """Declare a route that only reads, whatever its method. Order among decorators does not
    matter."""
    setattr(view, UNIT_ATTRIBUTE, "read")
    return view


def writes(view: ViewT) -> ViewT:
    """Declare a route that writes, whatever its method."""
    setattr(view, UNIT_ATTRIBUTE, "write")
    return view


def declared_unit(view: Callable[..., object] | None, method: str) -> Unit:
    """What the route of ``view`` declares for a request with ``method``: its own
    :func:`reads`/:func:`writes`, else read for GET and HEAD, write for the others."""
    declared = getattr(view, UNIT_ATTRIBUTE, None)
    if declared is None:
        return "read" if method in READING_METHODS else "write"
    return "write" if declared == "write" else "read"


def request_unit(app: Flask, request: Request) -> Unit:
    """The unit kind of ``request``'s route in ``app`` (write when no route matched)."""
    rule = request.url_rule
    if rule is None or rule.endpoint is None:
        return "write"
    return declared_unit(app.view_functions.get(rule.endpoint), request.method)


class LabFlask(Flask):
    """The application class: runs each view in the units its route declares."""

    def dispatch_request(self) -> ResponseReturnValue:
        """Flask's dispatch, inside :func:`labapp.db.units` of the route's kind."""
        with units(writing=request_unit(self, request) == "write"):
            return super().dispatch_request()
