"""Errors: the AppError family and the handlers that turn every error into one shape.

Under ``/api``, ``/odata`` and ``/healthz`` every error — ours, Werkzeug's, marshmallow's or an
unexpected exception — becomes an RFC 9457 problem document (``application/problem+json``).
Everywhere else the same error renders ``templates/error.html``. A face with an error format
of its own (OData under ``/odata``) registers a renderer for its path prefix
(:func:`register_error_renderer`).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from flask import Flask, Response, current_app, render_template, request
from marshmallow import ValidationError
from sqlalchemy.exc import DataError, OperationalError
from werkzeug.exceptions import HTTPException

PROBLEM_MEDIA_TYPE = "application/problem+json"
WWW_AUTHENTICATE = 'Bearer, Basic realm="labapp"'
MACHINE_PREFIXES = ("/api/", "/odata")
MACHINE_PATHS = {"/api", "/healthz"}

log = logging.getLogger(__name__)

# Problem codes for the HTTP errors Werkzeug raises itself (routing, body parsing, limits).
_HTTP_CODES = {
    400: "bad_request",
    401: "not_authenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    416: "range_not_satisfiable",
    429: "too_many_requests",
}


class AppError(Exception):
    """An error a client can cause or act on; carries everything the problem body needs."""

    status = 400
    code = "bad_request"
    title = "Bad request"

    def __init__(self, detail: str, *, code: str | None = None,
                 errors: list[dict[str, str]] | None = None,
                 headers: Mapping[str, str] | None = None, item: int | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        if code:
            self.code = code
        self.errors = errors
        self.headers = dict(headers or {})
        # The index of the request body's item the error is about (``entities[3]``), as data
        # for a caller that names the item its own way (the import: by spreadsheet row).
        self.item = item


class InvalidInput(AppError):
    """400: the request is well-formed but its content is not acceptable."""

    code = "invalid_input"
    title = "Invalid input"


class NotAuthenticated(AppError):
    status, code, title = 401, "not_authenticated", "Authentication required"

    def __init__(self, detail: str = "Authentication is required.", **kwargs: Any) -> None:
        super().__init__(detail, **kwargs)
        self.headers.setdefault("WWW-Authenticate", WWW_AUTHENTICATE)


class Forbidden(AppError):
    status, code, title = 403, "forbidden", "Forbidden"


class NotFound(AppError):
    status, code, title = 404, "not_found", "Not found"


class Conflict(AppError):
    status, code, title = 409, "conflict", "Conflict"


class Gone(AppError):
    status, code, title = 410, "gone", "Gone"


class UnsupportedMediaType(AppError):
    status, code, title = 415, "unsupported_media_type", "Unsupported media type"


class TooManyRequests(AppError):
    status, code, title = 429, "too_many_requests", "Too many requests"

    def __init__(self, detail: str, retry_after: int, **kwargs: Any) -> None:
        super().__init__(detail, **kwargs)
        self.headers["Retry-After"] = str(max(1, int(retry_after)))


class ErrorRenderer(Protocol):
    """Renders one error for a face with its own format: ``(status, code, detail, errors,
    headers)`` → response."""

    def __call__(self, status: int, code: str, detail: str,
                 errors: list[dict[str, str]] | None,
                 headers: Mapping[str, str]) -> Response: ...


_RENDERERS = "labapp.error_renderers"


def register_error_renderer(app: Flask, prefix: str, render: ErrorRenderer) -> None:
    """Render the errors of ``prefix`` (the path itself and everything under ``prefix/``)
    with ``render`` instead of problem JSON."""
    app.extensions.setdefault(_RENDERERS, []).append((prefix, render))


def _renderer() -> ErrorRenderer | None:
    path = request.path
    renderers: list[tuple[str, ErrorRenderer]] = current_app.extensions.get(_RENDERERS, [])
    for prefix, render in renderers:
        if path == prefix or path.startswith(prefix + "/"):
            return render
    return None


def wants_problem_json() -> bool:
    """True when the current request is for the machine faces (API, OData, health)."""
    path = request.path
    return path in MACHINE_PATHS or path.startswith(MACHINE_PREFIXES)


def flatten_messages(messages: Any, prefix: str = "") -> list[dict[str, str]]:
    """Turn marshmallow's nested message dict into ``[{field, message}]`` with dotted paths."""
    if isinstance(messages, Mapping):
        flat: list[dict[str, str]] = []
        for key, value in messages.items():
            field = f"{prefix}.{key}" if prefix else str(key)
            flat.extend(flatten_messages(value, field))
        return flat
    if isinstance(messages, list) and all(isinstance(item, str) for item in messages):
        return [{"field": prefix or "_schema", "message": message} for message in messages]
    if isinstance(messages, list):
        return [entry for item in messages for entry in flatten_messages(item, prefix)]
    return [{"field": prefix or "_schema", "message": str(messages)}]


def problem_body(status: int, code: str, title: str, detail: str,
                 errors: list[dict[str, str]] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"type": f"/problems/{code}", "title": title, "status": status,
                            "detail": detail, "code": code}
    if errors:
        body["errors"] = errors
    return body


def _respond(status: int, code: str, title: str, detail: str,
             errors: list[dict[str, str]] | None = None,
             headers: Mapping[str, str] | None = None) -> Response:
    render = _renderer()
    if render is not None:
        return render(status, code, detail, errors, headers or {})
    if wants_problem_json():
        from flask import json

        response = Response(json.dumps(problem_body(status, code, title, detail, errors)),
                            status=status, mimetype=PROBLEM_MEDIA_TYPE)
    else:
        response = Response(render_template("error.html", status=status, title=title,
                                            detail=detail, errors=errors or []),
                            status=status, mimetype="text/html")
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


def problem_response(error: AppError) -> Response:
    """The answer to ``error`` in the current request's format (problem JSON under
    ``/api``), for code that must answer an error without raising it (an after-request
    hook)."""
    return _respond(error.status, error.code, error.title, error.detail, error.errors,
                    error.headers)


def _handle_app_error(error: AppError) -> Response:
    return problem_response(error)


def _handle_validation_error(error: ValidationError) -> Response:
    errors = flatten_messages(error.messages)
    return _respond(400, "validation_failed", "Validation failed",
                    "The request body has invalid or missing fields.", errors)


def _handle_http_exception(error: HTTPException) -> Response:
    status = error.code or 500
    code = _HTTP_CODES.get(status, "http_error")
    if status == 400 and "JSON" in (error.description or ""):
        code = "invalid_json"
    headers = {}
    for name, value in error.get_headers():
        if name.lower() not in {"content-type", "content-length"}:
            headers[name] = value
    if status == 401:
        headers["WWW-Authenticate"] = WWW_AUTHENTICATE
    return _respond(status, code, error.name, error.description or error.name, None, headers)


def _handle_unexpected(error: Exception) -> Response:
    log.exception("unhandled error on %s %s", request.method, request.path)
    return _respond(500, "internal_error", "Internal server error",
                    "The server failed to complete the request; the error has been logged.")


def _handle_data_error(error: DataError) -> Response:
    log.info("database refused a value on %s %s: %s", request.method, request.path, error.orig)
    return _respond(400, "invalid_value", "Invalid value",
                    "A value does not fit its field (too long, out of range or malformed).")


# PostgreSQL's deadlock_detected and serialization_failure: two requests wrote the same rows
# in an order that cannot both succeed; the database rolled one back and a retry succeeds.
_WRITE_CONFLICT_STATES = frozenset({"40P01", "40001"})
# How long a client is told to wait before retrying a request the database was too busy for.
RETRY_AFTER_BUSY = "1"


def _handle_operational_error(error: OperationalError) -> Response:
    """Contention is the client's to retry, never a 500: a PostgreSQL deadlock or
    serialization failure is 409 ``write_conflict``; SQLite still locked after its busy
    timeout is 503 ``database_busy`` with ``Retry-After``. Anything else is unexpected."""
    original = error.orig
    if getattr(original, "sqlstate", None) in _WRITE_CONFLICT_STATES:
        log.info("write conflict on %s %s: %s", request.method, request.path, original)
        return _respond(409, "write_conflict", "Write conflict",
                        "Another request changed the same data at the same moment; nothing "
                        "was saved. Send the request again.")
    message = str(original).lower()
    if "database is locked" in message or "database is busy" in message:
        log.warning("database busy on %s %s", request.method, request.path)
        holder = _busy_holder()
        if holder is not None:
            return _respond(503, "database_busy", "Database busy", holder.detail,
                            headers={"Retry-After": str(holder.retry_after)})
        return _respond(503, "database_busy", "Database busy",
                        "The database was busy with other writes for too long; nothing was "
                        "saved. Send the request again.", headers={"Retry-After": RETRY_AFTER_BUSY})
    return _handle_unexpected(error)


@dataclass(frozen=True)
class BusyHolder:
    """What holds the database's write lock for long, as a refused writer is told it:
    ``detail`` names it, ``retry_after`` is the seconds to wait."""

    detail: str
    retry_after: int


# app.extensions: callables telling what holds the write lock for long now (or None); a
# feature with long write units registers one (imports: a commit being written).
BUSY_HOLDERS = "labapp.errors.busy_holders"


def _busy_holder() -> BusyHolder | None:
    """The first long holder of the write lock a feature names; None when none does, or
    when asking fails (the refused request is answered all the same)."""
    holders: list[Callable[[], BusyHolder | None]] = current_app.extensions.get(BUSY_HOLDERS, [])
    for holder in holders:
        try:
            found = holder()
        except Exception:
            log.exception("asking %r what holds the database failed", holder)
            continue
        if found is not None:
            return found
    return None


def reject_nul_characters() -> None:
    """No path, query or form value may hold NUL: no name or id has one, PostgreSQL refuses
    it. (JSON bodies are checked where they are parsed.)"""
    values = [request.path, *request.args.values()]
    if request.mimetype in {"application/x-www-form-urlencoded", "multipart/form-data"}:
        values.extend(request.form.values())
    if any("\x00" in value for value in values):
        raise InvalidInput("NUL characters are not allowed in values.", code="invalid_value")


def register_error_handlers(app: Flask) -> None:
    """Route every error source to the one problem/HTML renderer."""
    app.before_request(reject_nul_characters)
    app.register_error_handler(AppError, _handle_app_error)
    app.register_error_handler(DataError, _handle_data_error)
    app.register_error_handler(OperationalError, _handle_operational_error)
    app.register_error_handler(ValidationError, _handle_validation_error)
    app.register_error_handler(HTTPException, _handle_http_exception)
    app.register_error_handler(Exception, _handle_unexpected)
