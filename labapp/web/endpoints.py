"""Declaring an API endpoint: one decorator loads its input and records its documentation.

``@endpoint`` rejects anonymous callers (unless ``public``), requires
``Content-Type: application/json`` on bodies (415), parses the JSON (400 ``invalid_json`` with
the position of the error), loads it through the marshmallow schema (400
``validation_failed``, unknown keys rejected) and passes the result as ``body``. Query
parameters load the same way into ``query``. The metadata it records is what
``/api/openapi.json`` is built from. Put ``@require_scope`` above it so scope checks come
before body validation.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import wraps
from typing import Any

from flask import request
from marshmallow import Schema

from labapp.errors import InvalidInput, NotAuthenticated, UnsupportedMediaType
from labapp.web.loader import current_actor

SchemaRef = type[Schema] | Schema
# A body the view loads itself, as the document shows it: a schema, or a JSON Schema object
# whose "items" or "properties" may name schemas.
FormSchema = SchemaRef | Mapping[str, Any]


@dataclass(frozen=True)
class ApiDoc:
    """What the OpenAPI document says about one view."""

    summary: str
    responses: Mapping[int, SchemaRef | str | None]
    body: SchemaRef | None = None
    query: SchemaRef | None = None
    optional_body: bool = False
    public: bool = False
    throttled: bool = False
    forms: Mapping[str, FormSchema] = field(default_factory=dict)
    problems: tuple[int, ...] = ()
    path: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    components: Callable[[], Mapping[str, Mapping[str, Any]]] | None = None
    media: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def _schema_instance(schema: SchemaRef) -> Schema:
    return schema() if isinstance(schema, type) else schema


def json_payload() -> Any:
    """The request's JSON document; 415 when it is not JSON, 400 when it does not parse."""
    if not request.is_json:
        raise UnsupportedMediaType(
            f"Send the body as application/json (got {request.mimetype or 'no content type'}).")
    raw = request.get_data(cache=True)
    try:
        document = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInput(f"The body is not valid JSON: {exc}", code="invalid_json") from None
    if b"\\u0000" in raw and _holds_nul(document):
        raise InvalidInput("NUL characters (\\u0000) are not allowed in values.",
                           code="invalid_value")
    return document


def _holds_nul(value: Any) -> bool:
    """Whether a decoded JSON document has NUL in any string, key or value."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(key) or _holds_nul(item) for key, item in value.items())
    if isinstance(value, list):
        return any(_holds_nul(item) for item in value)
    return False


def endpoint(summary: str, *, responses: Mapping[int, SchemaRef | str | None],
             body: SchemaRef | None = None, query: SchemaRef | None = None,
             optional_body: bool = False, public: bool = False, throttled: bool = False,
             forms: Mapping[str, FormSchema] | None = None,
             problems: tuple[int, ...] = (),
             path: Mapping[str, Mapping[str, Any]] | None = None,
             components: Callable[[], Mapping[str, Mapping[str, Any]]] | None = None,
             media: Mapping[str, Mapping[str, Any]] | None = None
             ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare an API view (see the module docstring).

    With ``optional_body`` an empty request body loads as an empty object. ``forms`` maps
    the media types of a body the view loads itself (form uploads, a JSON array) to its
    schema (documentation only); ``problems`` names further problem statuses the view can
    answer (such as 409); ``path`` gives the JSON Schema of path parameters that are more
    than any string (such as a pattern the view checks); ``components`` returns further
    named schemas the view's schemas refer to, computed each time the document is built
    (such as one per class of the data model); ``media`` maps further media types of the
    success response to their JSON Schema (such as a CSV download).
    """
    doc = ApiDoc(summary, dict(responses), body, query, optional_body, public, throttled,
                 dict(forms or {}), problems, dict(path or {}), components, dict(media or {}))

    def decorate(view: Callable[..., Any]) -> Callable[..., Any]:
        @wraps(view)
        def handle(*args: Any, **kwargs: Any) -> Any:
            if not public and not current_actor().is_authenticated:
                raise NotAuthenticated()
            if query is not None:
                kwargs["query"] = _schema_instance(query).load(request.args.to_dict())
            if body is not None:
                empty = optional_body and not request.content_length and not request.is_json
                kwargs["body"] = _schema_instance(body).load({} if empty else json_payload())
            return view(*args, **kwargs)

        # Read back by the OpenAPI document; a function's type declares no such attribute.
        setattr(handle, "api_doc", doc)  # noqa: B010
        return handle
    return decorate
