"""Check-in and check-out from the page of a sample or plate.

The page itself belongs to the entity browser (:mod:`labapp.entities.views`), which may not
import storage; its storage part posts here. Both forms call the services the
``/api/storage`` endpoints call, inside one transaction, then go back to the item's page
with a flash message. A refusal shows the item's page again with the reason (and the typed
location, to correct it), with the refusal's status.
"""
from __future__ import annotations

from typing import Any

from flask import Blueprint, flash, redirect, request
from werkzeug.wrappers import Response as BaseResponse

from labapp.access.actor import Actor
from labapp.entities.detail import render_detail
from labapp.entities.display import detail_url
from labapp.entities.navigation import stored_places
from labapp.errors import AppError, InvalidInput
from labapp.reading.lookup import class_named, load_visible
from labapp.storage import checkin, service
from labapp.web.loader import current_actor
from labapp.web.pages import members_only

bp = members_only(Blueprint("storage_items", __name__, url_prefix="/storage/items"))


def _location_id(actor: Actor, code: str) -> str:
    """The visible location a scanned barcode or typed id names (400 for anything else)."""
    found = service.find_scanned(actor, code) if code else None
    if found is None:
        raise InvalidInput(f"No location you may see carries the code {code!r}."
                           if code else "Scan or type the location first.")
    eclass, location_id, _ = found
    if eclass != service.LOCATION:
        raise InvalidInput(f"{code} is a {eclass}, not a location.")
    return location_id


def _back(eclass: str, entity_id: str, message: str) -> BaseResponse:
    flash(message, "success")
    return redirect(f"{detail_url(eclass, entity_id)}#storage", 303)


def _slot_text(slot: str | None) -> str:
    return f" · {slot}" if slot else ""


@bp.post("/<eclass>/<path:entity_id>/checkin")
def check_in(eclass: str, entity_id: str) -> BaseResponse:
    """Store the item in the location the form names (its barcode or id), in the typed slot
    or the first free one; an item stored elsewhere moves."""
    actor = current_actor()
    spec = class_named(eclass)
    load_visible(actor, spec, entity_id)
    typed = {"locationID": request.form.get("locationID", "").strip(),
             "position": request.form.get("position", "").strip()}
    item: dict[str, Any] = {"eClass": spec.name, "id": entity_id}
    if typed["position"]:
        item["position"] = typed["position"]
    try:
        location_id = _location_id(actor, typed["locationID"])
        location = checkin.check_in(actor, location_id, [item])
    except AppError as error:
        return render_detail(actor, spec, entity_id, status=error.status,
                             storage_error=error.detail, checkin=typed)
    _, slot = service.position_of(spec.name, entity_id)
    return _back(spec.name, entity_id, f"{spec.name} {entity_id} checked in to "
                                       f"{location['hierarchy']}{_slot_text(slot)}.")


@bp.post("/<eclass>/<path:entity_id>/checkout")
def check_out(eclass: str, entity_id: str) -> BaseResponse:
    """Take the item out of where it is stored."""
    actor = current_actor()
    spec = class_named(eclass)
    load_visible(actor, spec, entity_id)
    location_id, slot = service.position_of(spec.name, entity_id)
    try:
        checkin.check_out(actor, [{"eClass": spec.name, "id": entity_id}])
    except AppError as error:
        return render_detail(actor, spec, entity_id, status=error.status,
                             storage_error=error.detail)
    place = stored_places(actor, [location_id]).get(location_id) if location_id else None
    where = f" of {place.path}{_slot_text(slot)}" if place else ""
    return _back(spec.name, entity_id, f"{spec.name} {entity_id} checked out{where}.")
