"""Each route declares once whether it reads or writes, and its view runs in one unit of work
of that kind, opened here: views and API functions open none of their own.

A GET or HEAD route reads and any other method writes, unless the view says otherwise with
:func:`reads` (a POST that only queries, such as ``/api/query/dataset``) or :func:`writes`
(a GET that changes something, such as ``/api/notification/markAllAsSeen``). The application
class decides it once per request and opens the :func:`labapp.db.transaction` of that kind
around the view only (:class:`LabFlask`): a read unit — one snapshot, no write lock, any
write refused — or a write unit (SQLite: ``BEGIN IMMEDIATE``). A reading route's request
begins its transaction as one snapshot (PostgreSQL: REPEATABLE READ) before authentication's
statement, so the actor and what the view reads agree. The unit commits when the view
answers below 400 and rolls back when the view raises or answers 400 or more, so a refused
request saves nothing.

A view declared with :func:`opens_own_units` is run without that unit and opens its own, for
work that must not be one unit: a login verifies the password before its write (no write
lock while Argon2 runs) and keeps a failed attempt while it answers 401; a refresh token
reused revokes its login while it answers 401; the home page reads and opens a write unit
for a first visitor's starter dashboard only.

What runs around the view is not the route's work and keeps writing units: authentication's
bookkeeping (a failed attempt, a PAT's last use), the search queue drained after a commit or
at start-up, error handlers.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Literal, TypeVar

from flask import Flask, Request, Response, request
from flask.typing import ResponseReturnValue

from labapp.db import snapshots, transaction, units

ViewT = TypeVar("ViewT", bound=Callable[..., object])
Unit = Literal["read", "write"]
UNIT_ATTRIBUTE = "labapp_unit"
OWN_UNITS_ATTRIBUTE = "labapp_own_units"
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


def opens_own_units(view: ViewT) -> ViewT:
    """Declare a view that opens its units of work itself: the request handler opens none
    around it. Each one is a decision, listed in ``tests/contracts/test_unit_of_work.py``."""
    setattr(view, OWN_UNITS_ATTRIBUTE, True)
    return view


def opens_own(view: Callable[..., object] | None) -> bool:
    """Whether ``view`` is declared with :func:`opens_own_units`."""
    return bool(getattr(view, OWN_UNITS_ATTRIBUTE, False))


def declared_unit(view: Callable[..., object] | None, method: str) -> Unit:
    """What the route of ``view`` declares for a request with ``method``: its own
    :func:`reads`/:func:`writes`, else read for GET and HEAD, write for the others."""
    declared = getattr(view, UNIT_ATTRIBUTE, None)
    if declared is None:
        return "read" if method in READING_METHODS else "write"
    return "write" if declared == "write" else "read"


def request_view(app: Flask, request: Request) -> Callable[..., object] | None:
    """The view of ``request``'s route in ``app`` (None when no route matched)."""
    rule = request.url_rule
    return app.view_functions.get(rule.endpoint) if rule and rule.endpoint else None


def runs_in_read_unit(app: Flask, request: Request) -> bool:
    """Whether :class:`LabFlask` runs ``request``'s view in a read unit it opens."""
    view = request_view(app, request)
    return view is not None and not opens_own(view) and request_unit(app, request) == "read"


def request_unit(app: Flask, request: Request) -> Unit:
    """The unit kind of ``request``'s route in ``app`` (write when no route matched)."""
    rule = request.url_rule
    if rule is None or rule.endpoint is None:
        return "write"
    return declared_unit(app.view_functions.get(rule.endpoint), request.method)


class _Refused(Exception):
    """The view answered an error: its unit of work rolls back, the answer stands."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status)
        self.response = response


class LabFlask(Flask):
    """The application class: runs each view in one unit of work of the kind its route
    declares."""

    def full_dispatch_request(self) -> Response:
        """Flask's, in :func:`labapp.db.snapshots` for a route whose view runs in a read
        unit: on PostgreSQL authentication's statement begins the snapshot the view then
        reads in."""
        reading = runs_in_read_unit(self, request) and self.config["LABAPP"]["READ_UNITS"]
        with snapshots(reading=reading):
            return super().full_dispatch_request()

    def dispatch_request(self) -> ResponseReturnValue:
        """Flask's dispatch inside :func:`labapp.db.units` of the route's kind, and inside
        one :func:`labapp.db.transaction` unless the view opens its own: committed when the
        view answers below 400, rolled back when it raises or answers 400 or more."""
        view = request_view(self, request)
        with units(writing=request_unit(self, request) == "write"):
            if view is None or opens_own(view):  # no route: Flask raises its 404 or 405
                return super().dispatch_request()
            try:
                with transaction():
                    response = self.make_response(super().dispatch_request())
                    if response.status_code >= 400:
                        raise _Refused(response)
            except _Refused as refused:
                return refused.response
            return response
