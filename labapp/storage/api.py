"""``/api/storage``: locations, their parents, children and log, check-in and check-out."""
from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify
from flask.sansio.blueprints import BlueprintSetupState
from werkzeug.routing import BaseConverter

from labapp.storage import checkin, log, service
from labapp.storage.schemas import (
    LOCATION_ARRAY,
    ItemRefSchema,
    LocationPageSchema,
    LocationQuerySchema,
    LocationSchema,
    LogPageSchema,
    LogQuerySchema,
    StoredItemSchema,
    item_array,
)
from labapp.web.endpoints import endpoint, json_payload
from labapp.web.loader import current_actor

bp = Blueprint("storage_api", __name__, url_prefix="/api/storage")


class LocationIdConverter(BaseConverter):
    """A location id in a path: one segment, never ``checkout`` (``/location/checkout`` is
    the check-out operation, so ``GET`` there is 405, not a location named so)."""

    regex = r"(?!checkout(?![^/]))[^/]+"


def _add_converter(state: BlueprintSetupState) -> None:
    state.app.url_map.converters.setdefault("locationid", LocationIdConverter)


# Registered before the routes below are added (deferred functions run in order).
bp.record_once(_add_converter)


@bp.get("/location")
@endpoint("A page of the visible locations (at most 500) with checkin, checkout, stored, "
          "available and hierarchy; OData options as the entity list.",
          query=LocationQuerySchema, responses={200: LocationPageSchema})
def list_locations(query: dict[str, Any]) -> Response:
    page = service.list_locations(
        current_actor(), filter_text=query.get("filter"), orderby=query.get("orderby"),
        select_text=query.get("select"), top=query.get("top"), skip=query.get("skip"))
    return jsonify(page.to_json())


@bp.post("/location")
@endpoint("Create or update locations: the entity batch for Locations (notation included). "
          "The body is a JSON array; the answer is the array of saved locations.",
          forms={"application/json": LOCATION_ARRAY},
          responses={200: LocationSchema(many=True), 201: LocationSchema(many=True)},
          problems=(403, 404, 409))
def save_locations() -> tuple[Response, int]:
    payload = json_payload()
    saved, created = service.save_locations(current_actor(), payload)
    return jsonify(saved), 201 if created else 200


@bp.post("/location/checkout")
@endpoint("Check items out of wherever they are stored, in one transaction. Answers the "
          "location when all came from one, else {locations: [...]}.",
          forms={"application/json": item_array(ItemRefSchema)},
          responses={200: "The updated location, or {locations: [...]}"},
          problems=(403, 404, 409))
def check_out() -> Response:
    payload = json_payload()
    answer = checkin.check_out(current_actor(), payload)
    return jsonify(answer)


@bp.get("/location/<locationid:location_id>")
@endpoint("One location with checkin, checkout, stored, available and hierarchy.",
          responses={200: LocationSchema})
def get_location(location_id: str) -> Response:
    return jsonify(service.location_detail(current_actor(), location_id))


@bp.get("/location/<locationid:location_id>/parents")
@endpoint("The visible ancestors of a location, root first.",
          responses={200: LocationSchema(many=True)})
def parents(location_id: str) -> Response:
    return jsonify(service.locations_api(service.ancestors(current_actor(), location_id)))


@bp.get("/location/<locationid:location_id>/children")
@endpoint("The visible direct children of a location.",
          responses={200: LocationSchema(many=True)})
def children(location_id: str) -> Response:
    return jsonify(service.locations_api(service.children(current_actor(), location_id)))


@bp.get("/location/<locationid:location_id>/log")
@endpoint("Check-ins, check-outs and moves of a location, newest first, paged by "
          "$top/$skip (at most 500).", query=LogQuerySchema, responses={200: LogPageSchema})
def location_log(location_id: str, query: dict[str, Any]) -> Response:
    actor = current_actor()
    service.get_location(actor, location_id)
    page = log.page(actor, location_id, top=query.get("top"), skip=query.get("skip"))
    return jsonify(page.to_json())


@bp.post("/location/<locationid:location_id>/checkin")
@endpoint("Check items into a location in one transaction (capacity and slots enforced; an "
          "item stored elsewhere is moved). Answers the updated location.",
          forms={"application/json": item_array(StoredItemSchema)},
          responses={200: LocationSchema}, problems=(403, 404, 409))
def check_in(location_id: str) -> Response:
    payload = json_payload()
    answer = checkin.check_in(current_actor(), location_id, payload)
    return jsonify(answer)
