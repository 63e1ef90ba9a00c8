"""An entity's detail page, shared by every face that answers with it: the entity browser,
the file upload (:mod:`labapp.files.views`) and the storage actions
(:mod:`labapp.storage.item_views`) show it again with their refusal, or redirect back to one
of its sections."""
from __future__ import annotations

from typing import Any

from flask import Response, redirect
from werkzeug.wrappers import Response as BaseResponse

from labapp.access.actor import Actor
from labapp.entities import display, loading, navigation
from labapp.entities.editing import may_create
from labapp.model.registry import ClassSpec, existing_class
from labapp.web.blocks import render_page

DETAIL_TEMPLATE = "entities/detail.html"
# A copy of a file would have no content, a copy of a user no password.
NOT_CLONED = frozenset({"File", "User"})


def _notes(actor: Actor, entity_id: str) -> list[dict[str, Any]]:
    """The visible notes about an entity, newest first."""
    quoted = entity_id.replace("'", "''")
    return loading.list_entities(actor, existing_class("Note"),
                                 filter_text=f"subjectID eq '{quoted}'",
                                 orderby="createdUtc desc").data


def render_detail(actor: Actor, spec: ClassSpec, entity_id: str, *, block: str | None = None,
                  status: int = 200, **extra: Any) -> Response:
    """The detail page (or one of its blocks for htmx) of a visible entity; 404 otherwise.

    ``extra`` overrides the context, e.g. ``storage_error`` (a refused check-in or
    check-out) and ``checkin`` (``{"locationID", "position"}`` as typed, to show again)."""
    entity = loading.entity_detail(actor, spec, entity_id)
    notes = _notes(actor, entity["id"])
    mentioned, visited = display.history_ids(spec, entity)
    names = loading.visible_names(actor, display.referenced_ids(spec, [entity], spec.fields)
                                  | display.page_people(entity, notes) | mentioned)
    places = navigation.stored_places(
        actor, display.place_ids(spec, [entity], spec.fields) | visited)
    filled, empty = display.field_rows(spec, entity, names, places)
    can_write = entity["canWrite"]
    context: dict[str, Any] = {
        "spec": spec, "entity": entity, "fields": filled, "empty_fields": empty,
        "names": names, "attributes": sorted((entity.get("attributes") or {}).items()),
        "notes": notes, "audit": display.audit_rows(spec, entity, names, places),
        "events": [display.event_text(event, names, places) for event in entity["events"]],
        "can_write": can_write,
        "can_clone": can_write and spec.name not in NOT_CLONED and may_create(actor, spec),
        "note_error": None, "note_text": "", "note_notice": None, "file_error": None,
        "status_error": None, "storage": display.storage(spec, entity, places),
        "storage_error": None, "checkin": None,
        **navigation.detail_context(actor, spec, entity)}
    context.update(extra)
    return render_page(DETAIL_TEMPLATE, block=block, status=status, **context)


def back_to(spec: ClassSpec, entity_id: str, section: str) -> BaseResponse:
    """Back to one section of the detail page after a change (303)."""
    return redirect(f"{display.detail_url(spec.name, entity_id)}#{section}", 303)
