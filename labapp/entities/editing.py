"""The create and edit pages of an entity, registered on the entity browser's blueprint.

Both post the form as one item to :func:`labapp.entities.service.save_batch`. Errors the
service reports on a field appear next to that input (400); a stale version (409) shows the
form again with the user's changes merged onto the stored entity and says what moved.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from flask import Response, current_app, flash, redirect, request, url_for
from werkzeug.wrappers import Response as BaseResponse

from labapp.access.actor import Actor
from labapp.access.policy import may_create_class
from labapp.db import transaction
from labapp.entities import forms, loading, service
from labapp.entities.display import detail_url
from labapp.entities.forms import FORM_ERROR, EntityForm
from labapp.errors import AppError, Conflict, Forbidden, InvalidInput, NotFound
from labapp.model.registry import ClassSpec
from labapp.reading.lookup import class_named
from labapp.web.blocks import is_htmx, render_page
from labapp.web.loader import current_actor

FORM_TEMPLATE = "entities/form.html"
# app.extensions key of the PlacePicker storage installs (labapp.create_app).
PLACE_PICKER = "labapp.place_picker"


@dataclass(frozen=True)
class PlacePicker:
    """Where a create form may place a new sample or plate: ``places(actor)`` gives
    ``(location id, label)`` of the locations with room the actor may store into,
    ``free_slots(actor, location id)`` the free slots of one."""

    places: Callable[[Actor], list[tuple[str, str]]]
    free_slots: Callable[[Actor, str], list[str]]
# Files are made by uploading content, never through the entity form.
NOT_FROM_FORM = frozenset({"File"})


def may_create(actor: Actor, spec: ClassSpec) -> bool:
    """Whether the create form of ``spec`` is offered to ``actor`` (the API would accept it)."""
    return spec.name not in NOT_FROM_FORM and may_create_class(actor, spec.name)


def _page(form: EntityForm, *, status: int = 200, conflict: dict[str, Any] | None = None,
          add_row: bool = False) -> Response:
    rows = form.attributes + ([("", "")] if add_row else [])
    return render_page(FORM_TEMPLATE, status=status, form=form, spec=form.spec, rows=rows,
                       conflict=conflict)


def _save(actor: Actor, form: EntityForm) -> dict[str, Any]:
    """Save the form as one batch item; InvalidInput also for attribute rows that make no
    item (the one check the service cannot make: it never sees the rows)."""
    problem = forms.attribute_problem(form)
    if problem:
        raise InvalidInput(problem, errors=[{"field": f"entities.0.{forms.ATTRIBUTES}",
                                             "message": problem}])
    with transaction():
        return service.save_batch(actor, [forms.batch_item(form)], notation=False).entities[0]


def _refused(form: EntityForm, error: AppError) -> Response:
    """The form again with the service's complaint on the fields it names, else on top."""
    errors = forms.field_errors(error.errors) or {FORM_ERROR: error.detail}
    return _page(form.with_errors(errors), status=error.status)


def create(eclass: str) -> BaseResponse:
    """``GET``: the empty form (query parameters prefill fields); ``POST``: create."""
    actor = current_actor()
    spec = class_named(eclass)
    if not may_create(actor, spec):
        raise Forbidden(f"You may not create {spec.name} entities here.")
    blank = forms.new_form(spec, request.args if request.method == "GET" else None)
    if forms.is_placed(spec):
        blank = _with_places(actor, blank, request.args if request.method == "GET"
                             else request.form)
    if request.method == "GET":
        return _page(blank)
    form = forms.submitted(blank, request.form)
    if request.form.get("add_row"):
        return _page(form, add_row=True)
    try:
        created = _save(actor, form)
    except (InvalidInput, Conflict, Forbidden) as error:
        return _refused(form, error)
    flash(f"{spec.name} {created['id']} created.", "success")
    return redirect(detail_url(spec.name, created["id"]), 303)


def _with_places(actor: Actor, form: EntityForm, chosen: Mapping[str, str]) -> EntityForm:
    """``form`` with its place picker: the locations the actor may store into, and the free
    slots of the chosen one."""
    picker: PlacePicker = current_app.extensions[PLACE_PICKER]
    location_id = chosen.get(forms.LOCATION_FIELD, "")
    slots = picker.free_slots(actor, location_id) if location_id else []
    return forms.with_place_picker(form, picker.places(actor), slots, chosen)


def free_slots(eclass: str) -> BaseResponse:
    """The slot select of a create form for the location chosen in it (htmx swaps it in
    when the location changes)."""
    actor = current_actor()
    spec = class_named(eclass)
    if not forms.is_placed(spec):
        raise NotFound(f"{spec.name} entities are not stored in locations.")
    chosen = {forms.LOCATION_FIELD: request.args.get(forms.LOCATION_FIELD, "")}
    if not is_htmx():
        query: dict[str, Any] = dict(chosen)
        return redirect(url_for("entity_views.create", eclass=spec.name, **query))
    form = _with_places(actor, forms.new_form(spec), chosen)
    slot = next(item for item in form.inputs if item.name == forms.POSITION_FIELD)
    return render_page(FORM_TEMPLATE, block="slot_picker", form=form, spec=spec, input=slot)


def _conflict(actor: Actor, form: EntityForm) -> Response:
    """A stale edit: the user's changes on the stored entity, and what changed meanwhile."""
    if form.entity_id is None:
        raise TypeError("a new entity's form has no stored version to conflict with")
    stored = loading.entity_detail(actor, form.spec, form.entity_id)
    merged, moved = forms.merge_conflict(form, forms.edit_form(form.spec, stored))
    conflict = {"by": stored["modifiedBy"], "at": stored["modifiedUtc"],
                "version": stored["version"], "yours": form.version, "moved": moved}
    return _page(merged, status=409, conflict=conflict)


def edit(eclass: str, entity_id: str) -> BaseResponse:
    """``GET``: the form with the stored values; ``POST``: save the changed fields."""
    actor = current_actor()
    spec = class_named(eclass)
    entity = loading.entity_detail(actor, spec, entity_id)
    if not entity["canWrite"]:
        raise Forbidden(f"You may read but not change {spec.name} {entity_id}.")
    blank = forms.edit_form(spec, entity)
    if request.method == "GET":
        return _page(blank)
    form = forms.submitted(blank, request.form)
    if request.form.get("add_row"):
        return _page(form, add_row=True)
    try:
        saved = _save(actor, form)
    except Conflict as error:
        if error.code == "stale_version":
            return _conflict(actor, form)
        return _refused(form, error)
    except (InvalidInput, Forbidden) as error:
        return _refused(form, error)
    changed = saved["version"] != form.version
    flash(f"{spec.name} {entity_id} saved." if changed else "Nothing was changed.",
          "success" if changed else "info")
    return redirect(detail_url(spec.name, entity_id), 303)
