"""``/api/saved-view``: the saved views the caller may see (issue 21 §2)."""
from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify

from labapp.savedviews import service
from labapp.savedviews.schemas import (
    SavedViewInputSchema,
    SavedViewQuerySchema,
    SavedViewSchema,
)
from labapp.web.endpoints import endpoint
from labapp.web.loader import current_actor

bp = Blueprint("saved_view_api", __name__, url_prefix="/api/saved-view")


@bp.get("")
@endpoint("Saved views the caller owns or that are shared with them, their department, a "
          "project they can read or one of their roles (of one class with ?eClass=).",
          query=SavedViewQuerySchema, responses={200: SavedViewSchema(many=True)})
def list_views(query: dict[str, Any]) -> Response:
    actor = current_actor()
    data = [service.to_api(actor, view)
            for view in service.list_views(actor, query["eClass"])]
    return jsonify(data)


@bp.post("")
@endpoint("Save a list's filter, columns and sort under a name, owned by the caller.",
          body=SavedViewInputSchema, responses={201: SavedViewSchema})
def create_view(body: dict[str, Any]) -> tuple[Response, int]:
    actor = current_actor()
    data = service.to_api(actor, service.create(actor, body))
    return jsonify(data), 201


@bp.get("/<view_id>")
@endpoint("One saved view the caller may see.", responses={200: SavedViewSchema})
def get_view(view_id: str) -> Response:
    actor = current_actor()
    data = service.to_api(actor, service.get_visible(actor, view_id))
    return jsonify(data)


@bp.put("/<view_id>")
@endpoint("Replace a saved view (its owner or ADMIN).",
          body=SavedViewInputSchema, responses={200: SavedViewSchema})
def update_view(view_id: str, body: dict[str, Any]) -> Response:
    actor = current_actor()
    data = service.to_api(actor, service.update(actor, view_id, body))
    return jsonify(data)


@bp.delete("/<view_id>")
@endpoint("Delete a saved view (its owner only).", responses={204: "Deleted"})
def delete_view(view_id: str) -> Response:
    service.delete(current_actor(), view_id)
    return Response(status=204)
