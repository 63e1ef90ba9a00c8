"""``/api/entity``: list, read, create or update, clone."""
from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify, request
from marshmallow import fields

from labapp.entities import export, loading, service
from labapp.entities.export import EntityExportQuerySchema
from labapp.entities.schemas import (
    CloneOverridesSchema,
    EntityBatchSchema,
    EntityListSchema,
    EntityPageSchema,
    KeysetQuerySchema,
    entity_item_schemas,
)
from labapp.reading.lookup import class_named
from labapp.web.endpoints import endpoint
from labapp.web.loader import current_actor

bp = Blueprint("entity_api", __name__, url_prefix="/api/entity")


class EntityListQuerySchema(EntityExportQuerySchema, KeysetQuerySchema):
    """The list's options: OData's, ``$format``, ``$skiptoken`` and ``$count`` (both ignored
    by downloads, which hold every matching row)."""

    count = fields.String(data_key="$count", metadata={
        "pattern": "^([Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])?$",
        "description": "false: total is null, not counted (a filter matching hundreds of "
                       "thousands of rows costs most of the page to count; nextSkipToken "
                       "tells when the list ends); default true"})


@bp.get("/<eclass>")
@endpoint("A page of the visible entities of a class (at most 500), with OData options "
          "and keyset paging ($skiptoken, nextSkipToken); "
          "with $format=csv|xlsx (or Accept: text/csv or the XLSX media type) every matching "
          "row as a spreadsheet download with the list page's columns and labels.",
          query=EntityListQuerySchema, responses={200: EntityPageSchema},
          media=export.DOWNLOADS)
def list_entities(eclass: str, query: dict[str, Any]) -> Response:
    file_format = export.wanted_format(query.get("format"), request.accept_mimetypes)
    if file_format is not None:
        response = export.export_response(current_actor(), class_named(eclass), query,
                                          file_format)
    else:
        page = loading.list_entities(
            current_actor(), class_named(eclass), filter_text=query.get("filter"),
            orderby=query.get("orderby"), select_text=query.get("select"),
            top=query.get("top"), skip=query.get("skip"),
            skiptoken=query.get("skiptoken") or None, count=query.get("count"))
        response = jsonify(page.to_keyset_json())
    # The same URL answers JSON, CSV or XLSX by its Accept header: caches must key on it.
    response.vary.add("Accept")
    return response


@bp.get("/<eclass>/<path:entity_id>")
@endpoint("One entity with accessType, canWrite, files, events and auditEvents.",
          responses={200: "The entity"})
def get_entity(eclass: str, entity_id: str) -> Response:
    return jsonify(loading.entity_detail(current_actor(), class_named(eclass), entity_id))


@bp.post("")
@endpoint("Create or update entities in one transaction (functional notation allowed).",
          body=EntityBatchSchema, responses={200: EntityListSchema, 201: EntityListSchema},
          components=entity_item_schemas, problems=(404, 409))
def save_entities(body: dict[str, Any]) -> tuple[Response, int]:
    result = service.save_batch(current_actor(), body["entities"])
    return jsonify({"entities": result.entities}), 201 if result.created else 200


@bp.post("/<eclass>/<path:entity_id>")
@endpoint("Clone an entity; the body holds overrides (attributes are merged).",
          body=CloneOverridesSchema, optional_body=True, responses={201: "The new entity"})
def clone_entity(eclass: str, entity_id: str, body: dict[str, Any]) -> tuple[Response, int]:
    spec = class_named(eclass)
    created = service.clone(current_actor(), spec, entity_id, body)
    return jsonify(created), 201
