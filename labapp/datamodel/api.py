"""``/api/datamodel`` (expected, actual, diff) and ``POST /api/sync``."""
from __future__ import annotations

from flask import Blueprint, Response, current_app, jsonify

from labapp.access.actor import ADMIN
from labapp.datamodel import service
from labapp.datamodel.running import reload_model
from labapp.datamodel.synchronise import run_sync
from labapp.web.endpoints import endpoint
from labapp.web.loader import require_scope
from labapp.web.units import opens_own_units

bp = Blueprint("datamodel_api", __name__)


@bp.get("/api/datamodel")
@endpoint("The expected data model: every class (built-in and lab-defined) with its fields, "
          "statuses and transitions, id prefix and parent links, and the database views.",
          responses={200: "The data model"})
def expected() -> Response:
    return jsonify(service.describe())


@bp.get("/api/datamodel/actual")
@require_scope(ADMIN)
@endpoint("What the connected database really has: tables with their columns and types, "
          "indexes and views.", responses={200: "The reflected schema"})
def actual() -> Response:
    return jsonify(service.actual())


@bp.get("/api/datamodel/diff")
@require_scope(ADMIN)
@endpoint("The expected data model against the database: missing or extra tables, columns, "
          "indexes and views, type mismatches, missing default sequences and roles.",
          responses={200: "The differences"})
def diff() -> Response:
    reload_model(current_app)
    return jsonify(service.diff())


@bp.post("/api/sync")
@require_scope(ADMIN)
@endpoint("Bring the database in line with the expected data model: pending migrations, "
          "tables, columns and indexes of extensions, views, default sequences and roles; "
          "answers what was done (nothing, when run again).",
          responses={200: "The sync report"})
@opens_own_units
def sync() -> Response:
    return jsonify(run_sync(current_app))
