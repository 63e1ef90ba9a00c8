"""OData JSON errors for everything under ``/odata`` (decisions §13).

``{"error": {"code", "message", "target"?}}`` with the status of decisions §2; ``target``
names the query option at fault (``$filter``, ``$top``...). A 401 challenges Basic first,
so Excel and Power BI offer their user-name/password prompt; Bearer stays accepted.
"""
from __future__ import annotations

import json
from collections.abc import Mapping

from flask import Flask, Response

from labapp.errors import register_error_renderer

PREFIX = "/odata"
ODATA_VERSION = {"OData-Version": "4.0"}
WWW_AUTHENTICATE = 'Basic realm="labapp", Bearer'


def error_body(code: str, message: str, target: str | None = None) -> dict[str, object]:
    """The OData JSON error document."""
    error: dict[str, object] = {"code": code, "message": message}
    if target:
        error["target"] = target
    return {"error": error}


def render_error(status: int, code: str, detail: str,
                 errors: list[dict[str, str]] | None,
                 headers: Mapping[str, str]) -> Response:
    """One error of the OData face, as OData JSON."""
    target = errors[0]["field"] if errors else None
    response = Response(json.dumps(error_body(code, detail, target)), status=status,
                        mimetype="application/json")
    response.headers.update(headers)
    response.headers.update(ODATA_VERSION)
    if status == 401:
        response.headers["WWW-Authenticate"] = WWW_AUTHENTICATE
    return response


def init_odata_errors(app: Flask) -> None:
    """Make every error under ``/odata`` an OData JSON error."""
    register_error_renderer(app, PREFIX, render_error)
