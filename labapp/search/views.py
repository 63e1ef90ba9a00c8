"""The search page and the search box of the top bar.

``/search`` shows the results grouped by class with the matched words marked, a mode switch
and a class filter; htmx asks for its ``results`` block as the visitor changes them. The top
bar's box asks ``/search/suggest`` as the visitor types (its ``suggestions`` block; without
htmx that address goes to the results page) and submits to ``/search`` on Enter: a term
that is exactly one entity's id, name or barcode (a scanned barcode) opens that entity
directly. A sample or plate found shows where it is stored, by the location's name path
even when the visitor may not open the location.
"""
from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from flask import Blueprint, redirect, request, url_for
from markupsafe import Markup, escape
from werkzeug.wrappers import Response as BaseResponse

from labapp.access.actor import Actor
from labapp.entities import display
from labapp.entities.navigation import stored_places
from labapp.errors import AppError
from labapp.model.registry import classes, find_class
from labapp.search import service
from labapp.web.blocks import is_htmx, render_page
from labapp.web.loader import current_actor
from labapp.web.pages import members_only

bp = members_only(Blueprint("search_views", __name__, url_prefix="/search"))

TEMPLATE = "search/results.html"
MODES = ("all", service.EXACT, service.LIKE, service.FULLTEXT)
SUGGESTED = 8
_WORD = re.compile(r"\w+(?:[-.:/+]\w+)*")


def marked(text: Any, words: list[str]) -> Markup:
    """``text`` escaped, with the words that match the search (or start with a searched
    prefix) in ``<mark>``."""
    if text in (None, ""):
        return Markup("")
    wanted = tuple(words)

    def mark(match: re.Match[str]) -> str:
        folded = service.fold_word(match.group())
        hit = any(part.startswith(wanted) for part in folded) if wanted else False
        shown = str(escape(match.group()))
        return f"<mark>{shown}</mark>" if hit else shown

    pieces, last = [], 0
    source = str(text)
    for match in _WORD.finditer(source):
        pieces.append(str(escape(source[last:match.start()])))
        pieces.append(mark(match))
        last = match.end()
    pieces.append(str(escape(source[last:])))
    return Markup("".join(pieces))


def _run(term: str, mode: str, eclass: str | None, top: int) -> service.SearchResult:
    actor = current_actor()
    filter_text = f"eClass eq '{eclass}'" if eclass else None
    if mode == "all":
        return service.search_all(actor, term, filter_text=filter_text, top=str(top))
    return service.search(actor, mode, term, filter_text=filter_text, top=str(top))


def _places(actor: Actor, data: list[dict[str, Any]]) -> dict[str, display.Cell]:
    """``id → where it is stored`` of the stored samples and plates among the hits, the
    locations read in one query."""
    stored = [item for item in data if item.get(display.PLACE_FIELD)
              and (spec := find_class(item["eClass"])) is not None
              and display.is_place(spec, display.PLACE_FIELD)]
    places = stored_places(actor, (item[display.PLACE_FIELD] for item in stored))
    return {item["id"]: display.place_cell(item[display.PLACE_FIELD],
                                           item.get(display.SLOT_FIELD), places)
            for item in stored}


def _grouped(data: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for item in data:
        groups[item["eClass"]].append(item)
    return dict(groups)


@bp.get("")
def results() -> BaseResponse:
    """The results page (htmx: its ``results`` block)."""
    term = request.args.get("q", "").strip()
    mode = request.args.get("mode", "all")
    mode = mode if mode in MODES else "all"
    eclass = request.args.get("class") or None
    names = [spec.name for spec in classes()]
    eclass = eclass if eclass in names else None
    context: dict[str, Any] = {"term": term, "mode": mode, "eclass": eclass, "modes": MODES,
                               "class_names": names, "groups": {}, "total": 0, "total_exact": True,
                               "error": None,
                               "words": [], "places": {}}
    if term:
        try:
            found = _run(term, mode, eclass, service.DEFAULT_TOP)
        except AppError as error:
            context["error"] = error.detail
        else:
            jump = _scanned(found) if request.args.get("go") else None
            if jump is not None:
                return redirect(jump)
            context.update(groups=_grouped(found.data), total=found.total,
                           total_exact=found.total_exact,
                           words=service.highlight_words(term),
                           places=_places(current_actor(), found.data))
    return render_page(TEMPLATE, block="results", **context)


def _scanned(found: service.SearchResult) -> str | None:
    """The detail page to open when the submitted term is one entity's exact match."""
    exact = [item for item in found.data if item["matchedBy"] == service.EXACT]
    if len(exact) != 1:
        return None
    return url_for("entity_views.detail", eclass=exact[0]["eClass"], entity_id=exact[0]["id"])


@bp.get("/suggest")
def suggest() -> BaseResponse:
    """The type-ahead list of the top bar's box (a block of the results page, for htmx). A
    plain request — a browser without JavaScript, an address opened or shared — goes to the
    results page of its term, the list's whole-page form."""
    term = request.args.get("q", "").strip()
    if not is_htmx():
        response = redirect(url_for(".results", q=term or None), 303)
        response.vary.add("HX-Request")
        return response
    data: list[dict[str, Any]] = []
    words: list[str] = []
    if term:
        try:
            data = service.search_all(current_actor(), term, top=str(SUGGESTED)).data
            words = service.highlight_words(term)
        except AppError:
            data = []
    return render_page(TEMPLATE, block="suggestions", suggestions=data, term=term,
                       words=words)


bp.add_app_template_filter(marked, "marked")
