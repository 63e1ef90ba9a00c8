"""``GET /api/openapi.json``: the OpenAPI 3.1 document, built from the registered views.

Every ``/api`` view declares itself with :func:`labapp.web.endpoints.endpoint`; this module walks
the URL map and turns each declaration (schemas, scopes, public or not) into an operation with
its request body, responses and the problem responses it can give.
"""
from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin
from flask import Blueprint, Flask, Response, current_app, jsonify
from marshmallow import Schema, fields

from labapp.model.registry import generation
from labapp.web.endpoints import ApiDoc, endpoint

bp = Blueprint("openapi", __name__, url_prefix="/api")

_CONVERTER_TYPES = {"int": "integer", "float": "number"}
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_PATH_ARGUMENT = re.compile(r"<(?:(?P<converter>[a-z]+)(?:\([^)]*\))?:)?(?P<name>\w+)>")


class ProblemFieldSchema(Schema):
    field = fields.String()
    message = fields.String()


class ProblemSchema(Schema):
    """RFC 9457 problem document, the body of every API error."""

    type = fields.String(required=True)
    title = fields.String(required=True)
    status = fields.Integer(required=True)
    detail = fields.String(required=True)
    code = fields.String(required=True)
    errors = fields.List(fields.Nested(ProblemFieldSchema))


_PROBLEMS = {
    400: "Malformed or invalid input",
    401: "Not authenticated",
    403: "Authenticated but not allowed (scope, write access or CSRF token)",
    404: "No such resource, or not visible to the caller",
    409: "Conflict: stale version, duplicate, invalid status transition or still in use",
    410: "Gone: the change feed no longer holds the changes after this cursor",
    413: "Body too large",
    415: "Body is not application/json",
    429: "Over a rate limit (problem `rate_limited`); wait the seconds of `Retry-After`",
    500: "Unexpected server error",
    503: "Temporarily unavailable (for search: the index is missing or damaged; for a "
         "login: the directory does not answer)",
}


# Every /api answer's rate-limit fields (labapp/web/ratelimits.py), and Retry-After of a 429.
_RATE_LIMIT_HEADERS = {
    "RateLimit-Policy": {
        "description": "The caller's rate-limit policies (draft-ietf-httpapi-ratelimit-"
                       "headers-11): a list of `\"name\";q=<requests>;w=<seconds>`, one per "
                       "bucket the request was counted in (`token`, `user` or `address`); "
                       "absent when every limit is off.",
        "schema": {"type": "string"}},
    "RateLimit": {
        "description": "What is left of each policy after this request: "
                       "`\"name\";r=<requests that may be sent now>;t=<seconds until the "
                       "bucket is full again, or until one more request fits when none do>`.",
        "schema": {"type": "string"}},
}
_RETRY_AFTER = {"description": "Seconds to wait before sending again.", "required": True,
                "schema": {"type": "integer", "minimum": 1}}
_THROTTLED_LOGIN = (" — or, for this operation, too many failed login attempts (problem "
                    "`too_many_requests`)")


def _problem(code: int, throttled: bool = False) -> dict[str, Any]:
    description = _PROBLEMS[code] + (_THROTTLED_LOGIN if code == 429 and throttled else "")
    headers = {name: name for name in _RATE_LIMIT_HEADERS}
    if code == 429:
        headers["Retry-After"] = "Retry-After"
    return {"description": description, "headers": headers,
            "content": {"application/problem+json": {"schema": "Problem"}}}


def _path_and_parameters(rule: str) -> tuple[str, list[dict[str, Any]]]:
    parameters = []
    for match in _PATH_ARGUMENT.finditer(rule):
        schema_type = _CONVERTER_TYPES.get(match["converter"] or "", "string")
        parameters.append({"name": match["name"], "in": "path", "required": True,
                           "schema": {"type": schema_type}})
    return _PATH_ARGUMENT.sub(r"{\g<name>}", rule), parameters


def _operation(endpoint_name: str, method: str, doc: ApiDoc, scopes: tuple[str, ...],
               parameters: list[dict[str, Any]]) -> dict[str, Any]:
    responses: dict[str, Any] = {}
    for status, schema in doc.responses.items():
        if isinstance(schema, str) or schema is None:
            responses[str(status)] = {"description": schema or "Success"}
        else:
            responses[str(status)] = {"description": "Success",
                                      "content": {"application/json": {"schema": schema}}}
    for media_type, media_schema in doc.media.items():
        success = responses.setdefault("200", {"description": "Success"})
        success.setdefault("content", {})[media_type] = {"schema": dict(media_schema)}
    # Bad credentials in an Authorization header are a 401 on every path, public or not; a
    # state-changing request relying on the session cookie without its CSRF token is a 403.
    problems = {401, 429, 500}
    if doc.body is not None or doc.query is not None or parameters:
        problems.add(400)
    if doc.body is not None or doc.forms:
        problems |= {400, 413, 415}
    if not doc.public or method not in _SAFE_METHODS:
        problems.add(403)
    if parameters:
        problems.add(404)
    problems.update(doc.problems)
    for response in responses.values():
        response["headers"] = {name: name for name in _RATE_LIMIT_HEADERS}
    responses.update({str(code): _problem(code, doc.throttled) for code in sorted(problems)})
    parameters = [{**parameter, "schema": {**parameter["schema"],
                                           **doc.path.get(parameter["name"], {})}}
                  for parameter in parameters]
    operation: dict[str, Any] = {
        "operationId": endpoint_name.replace(".", "_"), "summary": doc.summary,
        "tags": [endpoint_name.split(".")[0]], "responses": responses,
    }
    if parameters:
        operation["parameters"] = list(parameters)
    if doc.query is not None:
        operation["parameters"] = operation.get("parameters", []) + [{"in": "query",
                                                                      "schema": doc.query}]
    if doc.body is not None:
        operation["requestBody"] = {"required": not doc.optional_body, "content": {
            "application/json": {"schema": doc.body}}}
    elif doc.forms:
        # Copies: apispec resolves the schemas named inside a JSON Schema in place.
        operation["requestBody"] = {"required": True, "content": {
            media_type: {"schema": copy.deepcopy(schema)}
            for media_type, schema in doc.forms.items()}}
    if doc.public:
        operation["security"] = [{}, {"bearer": []}, {"basic": []}, {"cookie": []}]
    if scopes:
        operation["x-required-scopes"] = list(scopes)
    return operation


def build_document(app: Flask) -> dict[str, Any]:
    """The OpenAPI 3.1 document for every ``/api`` view of ``app``."""
    spec = APISpec(title="labapp API", version="1", openapi_version="3.1.0",
                   plugins=[MarshmallowPlugin()],
                   info={"description": "Laboratory data management HTTP API. Errors are "
                                        "RFC 9457 problem documents. No string may hold "
                                        "NUL (U+0000): such a request is answered 400. "
                                        "Every request counts against rate limits (per "
                                        "token, per user, per client address without "
                                        "credentials); every answer says what is left in "
                                        "its RateLimit-Policy and RateLimit fields, and one "
                                        "over a limit is 429 rate_limited with Retry-After "
                                        "(GET /api/user/ratelimit: the same in JSON)."})
    spec.components.schema("Problem", schema=ProblemSchema)
    for name, header in _RATE_LIMIT_HEADERS.items():
        spec.components.header(name, header)
    spec.components.header("Retry-After", _RETRY_AFTER)
    spec.components.security_scheme("bearer", {"type": "http", "scheme": "bearer"})
    spec.components.security_scheme("basic", {"type": "http", "scheme": "basic",
                                              "description": "username:password or "
                                                             "username:PAT…"})
    spec.components.security_scheme("cookie", {"type": "apiKey", "in": "cookie",
                                               "name": "labapp_session"})
    spec.options["security"] = [{"bearer": []}, {"basic": []}, {"cookie": []}]
    paths: dict[str, dict[str, Any]] = {}
    components: dict[str, Mapping[str, Any]] = {}
    for rule in sorted(app.url_map.iter_rules(), key=lambda r: r.rule):
        if not rule.rule.startswith("/api/"):
            continue
        view = app.view_functions[rule.endpoint]
        doc: ApiDoc | None = getattr(view, "api_doc", None)
        if doc is None:
            continue
        if doc.components is not None:
            components.update(doc.components())
        path, parameters = _path_and_parameters(rule.rule)
        scopes = getattr(view, "required_scopes", ())
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            paths.setdefault(path, {})[method.lower()] = _operation(
                rule.endpoint, method, doc, scopes, parameters)
    for name, component in components.items():
        spec.components.schema(name, dict(component))
    for path, operations in paths.items():
        spec.path(path=path, operations=operations)
    return spec.to_dict()


@bp.get("/openapi.json")
@endpoint("This OpenAPI 3.1 document.", responses={200: "The OpenAPI document"}, public=True)
def openapi_document() -> Response:
    # Built again when the data model changed (a sync installs extension classes and fields).
    cached = current_app.extensions.get("labapp.web.openapi")
    if cached is None or cached[0] != generation():
        cached = current_app.extensions["labapp.web.openapi"] = (
            generation(), build_document(current_app))
    return jsonify(cached[1])
