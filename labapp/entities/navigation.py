"""Finding one's way between entities: the hierarchy and status parts of the detail page,
and the suggestion and uniqueness fragments of the entity forms.

The data comes from :mod:`labapp.query` (the same functions ``/api/query`` answers with), so
the pages show exactly what the actor may see. The routes here are registered on the entity
browser's blueprint, behind its login check. Their answers are named blocks of the page
templates: the ``children`` block of the detail page, the ``suggestions`` and ``uniqueness``
blocks of the form. The status change itself is posted to the detail page's route in
:mod:`labapp.entities.views`.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import Response, current_app, redirect, request

from labapp.access.actor import Actor
from labapp.entities.display import detail_url
from labapp.entities.forms import UNIQUE_CHECKED
from labapp.errors import NotFound
from labapp.model.registry import ClassSpec
from labapp.query.entity_suggest import suggest_entities
from labapp.query.hierarchy import ancestor_entities, child_entities
from labapp.query.status import status_info
from labapp.query.suggest import is_unique
from labapp.reading.entities import class_named, load_visible
from labapp.web.blocks import is_htmx, render_block
from labapp.web.loader import current_actor

DETAIL_TEMPLATE = "entities/detail.html"
FORM_TEMPLATE = "entities/form.html"
# Longest text sent to a suggestion or uniqueness query (longer input matches nothing useful).
MAX_QUERY = 100


def detail_context(actor: Actor, spec: ClassSpec, entity: Mapping[str, Any]) -> dict[str, Any]:
    """What the detail page adds to an entity: ``ancestors`` (root first), ``children`` (one
    level, each with ``hasChildren``) and ``transitions`` (the statuses it may move to)."""
    return {"ancestors": ancestor_entities(actor, spec, entity["id"]),
            "children": child_entities(actor, entity["id"]),
            "transitions": status_info(spec, entity["status"])["allowed"]}


def _fragment(template: str, block: str, **context: Any) -> Response:
    return current_app.make_response(render_block(template, block, **context))


def children(eclass: str, entity_id: str) -> Response:
    """The ``children`` block (a ``<ul>``) of the entity's visible children, for the tree's
    toggles. A plain request (the toggle followed without JavaScript) gets the entity's
    detail page instead; an invisible entity is a 404."""
    spec = class_named(eclass)
    if not is_htmx():
        return redirect(detail_url(spec.name, entity_id), 303)
    actor = current_actor()
    load_visible(actor, spec, entity_id)
    return _fragment(DETAIL_TEMPLATE, "children", children=child_entities(actor, entity_id))


def _typed(field: str) -> str:
    """The text of the input ``field``, which htmx sends under the input's own name."""
    return request.args.get(field, "").strip()[:MAX_QUERY]


def suggest(eclass: str, field: str) -> Response:
    """The ``suggestions`` block of the form: visible entities the reference ``field`` of
    ``eclass`` may point at, matching what was typed. 404 for a field that is not a
    reference to one class."""
    spec = class_named(eclass)
    target = spec.fields.get(field)
    if target is None or target.type != "ref" or target.ref == "*":
        raise NotFound(f"{spec.name} has no reference field {field!r} to suggest for.")
    typed = _typed(field)
    found = (suggest_entities(current_actor(), class_named(target.ref), typed)
             if typed else [])
    return _fragment(FORM_TEMPLATE, "suggestions", input={"name": field}, suggestions=found)


def unique(eclass: str, field: str) -> Response:
    """The ``uniqueness`` block of the form: whether the typed ``name`` or ``barcode`` is
    still free. With ``?id=`` (an edit form) the entity's own stored value counts as free;
    an invisible entity is a 404."""
    spec = class_named(eclass)
    if field not in UNIQUE_CHECKED or field not in spec.fields:
        raise NotFound(f"{spec.name} has no field {field!r} checked for uniqueness.")
    typed = _typed(field)
    available = None
    if typed:
        own_id = request.args.get("id")
        own = (getattr(load_visible(current_actor(), spec, own_id),
                       spec.fields[field].attr) if own_id else None)
        available = typed == own or is_unique(spec, field, typed)
    return _fragment(FORM_TEMPLATE, "uniqueness", input={"name": field}, available=available)
