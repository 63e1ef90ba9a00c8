"""``/api/query``: hierarchy, status, suggestions and the uniqueness check.

Optional trailing segments are separate routes with their own endpoint names, so each has
its own operation in the OpenAPI document. A segment that ends a path (id, query, value)
uses the ``path`` converter: ids may hold ``/`` (but not begin with it, as in ``/api/entity``).
"""
from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify
from marshmallow import fields

from labapp.query import entity_suggest, hierarchy, status, suggest
from labapp.query.filter import FILTER_HELP
from labapp.reading.lookup import class_named, load_visible
from labapp.reading.schemas import ODataQuerySchema
from labapp.web.endpoints import endpoint
from labapp.web.loader import current_actor

bp = Blueprint("query_lookup_api", __name__, url_prefix="/api/query")


class SuggestFieldQuerySchema(ODataQuerySchema):
    """The query options of the field suggestions."""

    filter = fields.String(data_key="$filter",
                           metadata={"description": "Only values of entities that pass it. "
                                                    + FILTER_HELP})


@bp.get("/hierarchy/<eclass>/<path:entity_id>")
@endpoint("The entity with its visible ancestors (root first) and its tree of visible "
          "descendants, at most 10 levels each way.", responses={200: "The hierarchy"})
def entity_hierarchy(eclass: str, entity_id: str) -> Response:
    return jsonify(hierarchy.entity_hierarchy(current_actor(), class_named(eclass), entity_id))


@bp.get("/status/<eclass>", endpoint="class_status")
@endpoint("The statuses of a class, its initial status and the allowed transitions.",
          responses={200: "The workflow"})
def class_status(eclass: str) -> Response:
    return jsonify(status.status_info(class_named(eclass)))


@bp.get("/status/<eclass>/<path:entity_id>", endpoint="entity_status")
@endpoint("The workflow of a class with the entity's current status and the statuses "
          "reachable from it.", responses={200: "The workflow"})
def entity_status(eclass: str, entity_id: str) -> Response:
    spec = class_named(eclass)
    entity = load_visible(current_actor(), spec, entity_id)
    return jsonify(status.status_info(spec, entity.status))


@bp.get("/suggest/entity/<eclass>", endpoint="suggest_entities")
@bp.get("/suggest/entity/<eclass>/<path:query>", endpoint="suggest_entities_matching")
@endpoint("Up to 20 visible entities of a class whose id, name or barcode contains the "
          "query (case-insensitive), best matches first: [{id, name, eClass}].",
          responses={200: "The suggestions"})
def suggest_entities(eclass: str, query: str | None = None) -> Response:
    return jsonify(entity_suggest.suggest_entities(current_actor(), class_named(eclass), query))


@bp.get("/suggest/field/<eclass>/<field>", endpoint="suggest_field")
@bp.get("/suggest/field/<eclass>/<field>/<path:text>", endpoint="suggest_field_matching")
@endpoint("Up to 50 distinct values of a field among the visible entities (optionally those "
          "passing $filter) that contain the query: [{value, name}].",
          query=SuggestFieldQuerySchema, responses={200: "The values"})
def suggest_field(eclass: str, field: str, query: dict[str, Any],
                  text: str | None = None) -> Response:
    return jsonify(suggest.suggest_field(current_actor(), class_named(eclass), field, text,
                                         query.get("filter")))


@bp.get("/unique/field/<eclass>/<field>/<path:value>")
@endpoint("Whether no entity holds the value in the field ({unique: boolean}); id and "
          "barcode are checked across all classes.", responses={200: "The answer"})
def unique_field(eclass: str, field: str, value: str) -> Response:
    return jsonify({"unique": suggest.is_unique(class_named(eclass), field, value)})
