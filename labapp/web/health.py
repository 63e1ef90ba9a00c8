"""``/healthz`` and ``/favicon.ico``. (The home page is the user's default dashboard:
``labapp.dashboards.views``, routed as ``web.home`` by :func:`labapp.create_app`.)"""
from __future__ import annotations

from flask import Blueprint, Response, current_app, jsonify
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from labapp.db import db
from labapp.schema import schema_state

bp = Blueprint("web", __name__)


@bp.get("/healthz")
def healthz() -> tuple[Response, int]:
    """No authentication: 200 when the database answers, its schema is current and every
    feature check (the search index) passes, else 503. A feature's degrading check (imports
    waiting for a worker that does not run) answers 200 with status ``degraded``: the site
    serves, but some work waits."""
    try:
        db.session.execute(text("SELECT 1"))
        state = schema_state()
    except SQLAlchemyError as exc:
        return jsonify({"status": "unavailable", "database": "unreachable",
                        "detail": exc.__class__.__name__}), 503
    # Features add checks of their own (name → None when fine, else what to do).
    problems = {name: check() for name, check
                in current_app.extensions.get("labapp.health", {}).items()}
    healthy = state.up_to_date and not any(problems.values())
    degraded = {name: check() for name, check
                in current_app.extensions.get("labapp.health.degraded", {}).items()
                } if state.up_to_date else {}
    status = "unavailable" if not healthy else "degraded" if any(degraded.values()) else "ok"
    body = {"status": status, "database": "ok",
            "schema": "up to date" if state.up_to_date else "needs upgrade",
            "revision": sorted(state.current), "expected": sorted(state.expected),
            **{name: problem or "ok" for name, problem in {**problems, **degraded}.items()}}
    return jsonify(body), 200 if healthy else 503


@bp.get("/favicon.ico")
def favicon() -> Response:
    """The site icon for clients that read no ``<link rel="icon">`` and ask the old address:
    the SVG every page links, so first loads log no 404."""
    return current_app.send_static_file("favicon.svg")
