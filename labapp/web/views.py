"""Home page and ``/healthz``."""
from __future__ import annotations

from flask import Blueprint, Response, jsonify, render_template
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from labapp.db import db
from labapp.schema import schema_state
from labapp.web.pages import signed_in_only

bp = Blueprint("web", __name__)


@bp.get("/")
def home() -> Response | str:
    return signed_in_only() or render_template("web/home.html")


@bp.get("/healthz")
def healthz() -> tuple[Response, int]:
    """No authentication: 200 when the database answers and its schema is current, else 503."""
    try:
        db.session.execute(text("SELECT 1"))
        state = schema_state()
    except SQLAlchemyError as exc:
        return jsonify({"status": "unavailable", "database": "unreachable",
                        "detail": exc.__class__.__name__}), 503
    finally:
        db.session.rollback()
    body = {"status": "ok" if state.up_to_date else "unavailable", "database": "ok",
            "schema": "up to date" if state.up_to_date else "needs upgrade",
            "revision": sorted(state.current), "expected": sorted(state.expected)}
    return jsonify(body), 200 if state.up_to_date else 503
