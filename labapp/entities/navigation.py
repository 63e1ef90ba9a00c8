"""Finding one's way between entities: the hierarchy and status parts of the detail page,
where a sample or plate is stored, and the suggestion and uniqueness fragments of the entity
forms.

The data comes from :mod:`labapp.query` (the same functions ``/api/query`` answers with), so
the pages show exactly what the actor may see. The routes here are registered on the entity
browser's blueprint, behind its login check. Their answers are named blocks of the page
templates: the ``children`` block of the detail page (one page of one level of the tree),
the ``suggestions`` and ``uniqueness`` blocks of the form. The status change itself is
posted to the detail page's route in :mod:`labapp.entities.views`.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flask import Response, current_app, redirect, request, url_for
from werkzeug.wrappers import Response as BaseResponse

from labapp.access.actor import Actor
from labapp.entities.display import detail_url
from labapp.entities.forms import UNIQUE_CHECKED
from labapp.errors import NotFound
from labapp.model.registry import ClassSpec
from labapp.query.entity_suggest import suggest_entities
from labapp.query.hierarchy import ancestor_entities, child_page, sample_counts
from labapp.query.listing import parse_paging
from labapp.query.status import status_info
from labapp.query.suggest import is_unique
from labapp.reading.lookup import class_named, load_visible
from labapp.reading.places import stored_places as stored_places
from labapp.web.blocks import is_htmx, render_block
from labapp.web.loader import current_actor

# Rows a page of a table or of one level of the tree shows.
PAGE_SIZE = 50
DETAIL_TEMPLATE = "entities/detail.html"
FORM_TEMPLATE = "entities/form.html"
# Longest text sent to a suggestion or uniqueness query (longer input matches nothing useful).
MAX_QUERY = 100


@dataclass(frozen=True)
class PageLink:
    """A link of the children's pager: to the parent's detail page at that page of its
    children (``href``, without JavaScript) and to the ``children`` block alone
    (``fragment``, for htmx)."""

    label: str
    rel: str
    href: str
    fragment: str


def _children_context(actor: Actor, spec: ClassSpec, entity_id: str,
                      nested: bool) -> dict[str, Any]:
    """The context of the ``children`` block: the page of the entity's children that
    ``?skip=`` asks for (400 when it is no count), the number of samples under each of them
    that samples can hang under (``sample_counts``, one query for the page) and the links
    to its neighbours."""
    limit, offset = parse_paging(PAGE_SIZE, request.args.get("skip"), max_top=PAGE_SIZE)
    page = child_page(actor, entity_id, limit=limit, offset=offset)
    skips = []
    if offset > 0:
        skips.append(("← Previous", "prev", max(offset - PAGE_SIZE, 0)))
    if page.total is not None and offset + PAGE_SIZE < page.total:
        skips.append(("Next →", "next", offset + PAGE_SIZE))
    pager = [PageLink(label, rel, f"{detail_url(spec.name, entity_id, skip=skip or None)}"
                                  "#hierarchy",
                      url_for("entity_views.children", eclass=spec.name, entity_id=entity_id,
                              skip=skip or None, nested=1 if nested else None))
             for label, rel, skip in skips]
    counts = sample_counts(actor, {child["id"]: child["eClass"] for child in page.data})
    return {"children": page, "pager": pager, "nested": nested, "sample_counts": counts}


def detail_context(actor: Actor, spec: ClassSpec, entity: Mapping[str, Any]) -> dict[str, Any]:
    """What the detail page adds to an entity: ``ancestors`` (root first), the ``children``
    block's context (a page of the next level, each with ``hasChildren``, and its pager),
    ``transitions`` (the statuses it may move to) and ``final_statuses`` (those of them that
    are final)."""
    transitions = status_info(spec, entity["status"])["allowed"]
    return {"ancestors": ancestor_entities(actor, spec, entity["id"]),
            **_children_context(actor, spec, entity["id"], nested=False),
            "transitions": transitions,
            "final_statuses": spec.workflow.final_statuses & set(transitions)}


def _fragment(template: str, block: str, **context: Any) -> Response:
    return current_app.make_response(render_block(template, block, **context))


def children(eclass: str, entity_id: str) -> BaseResponse:
    """The ``children`` block: a page (``?skip=``) of the entity's visible children, for the
    tree's toggles and pagers (``?nested=1`` inside a subtree). A plain request (a link
    followed without JavaScript) gets the entity's detail page at that page instead; an
    invisible entity is a 404."""
    spec = class_named(eclass)
    if not is_htmx():
        return redirect(detail_url(spec.name, entity_id, skip=request.args.get("skip")), 303)
    actor = current_actor()
    load_visible(actor, spec, entity_id)
    return _fragment(DETAIL_TEMPLATE, "children", **_children_context(
        actor, spec, entity_id, nested=request.args.get("nested") == "1"))


def _typed(field: str) -> str:
    """The text of the input ``field``, which htmx sends under the input's own name."""
    return request.args.get(field, "").strip()[:MAX_QUERY]


def suggest(eclass: str, field: str) -> Response:
    """The ``suggestions`` block of the form: visible entities the reference ``field`` of
    ``eclass`` may point at, matching what was typed. 404 for a field that is not a
    reference to one class."""
    spec = class_named(eclass)
    target = spec.fields.get(field)
    if target is None or target.type != "ref" or target.ref in (None, "*"):
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
                       spec.fields[field].stored_attr) if own_id else None)
        available = typed == own or is_unique(spec, field, typed)
    return _fragment(FORM_TEMPLATE, "uniqueness", input={"name": field}, available=available)
