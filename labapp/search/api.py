"""``/api/search`` (merged, exact, like, fulltext) and ``/api/query/freetext``.

The term is the rest of the path (it may hold ``/``); answers are ``{data, total}`` with each
entity's ``score`` and ``matchedBy`` (decisions §9).
"""
from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify
from marshmallow import Schema, fields

from labapp.query.filter import FILTER_HELP
from labapp.reading.schemas import ODataQuerySchema
from labapp.search import service
from labapp.web.endpoints import endpoint
from labapp.web.loader import current_actor

bp = Blueprint("search_api", __name__, url_prefix="/api")


class SearchQuerySchema(ODataQuerySchema):
    """The query options of every search."""

    filter = fields.String(data_key="$filter",
                           metadata={"description": "Only entities that pass it (common "
                                                    "fields: eClass, status, name, ...). "
                                                    + FILTER_HELP})
    top = fields.String(data_key="$top",
                        metadata={"description": "How many to return (default 50, at "
                                                 "most 500).", "pattern": "^[0-9]*$"})


class SearchResultSchema(Schema):
    data = fields.List(fields.Dict(), metadata={
        "description": "Entities, each with score and matchedBy (exact, like, fulltext)."})
    total = fields.Integer(metadata={"description": "How many matched (when totalExact is "
                                                    "false, at least that many)."})
    totalExact = fields.Boolean(metadata={
        "description": "False when total is a lower bound: the merged search counts the "
                       "distinct entities among each mode's best, and the PostgreSQL search "
                       "backend counts full-text matches up to 10,000."})


def _answer(result: service.SearchResult) -> Response:
    return jsonify({"data": result.data, "total": result.total,
                    "totalExact": result.total_exact})


_PROBLEMS = (503,)


@bp.get("/search/<path:term>")
@endpoint("Merged search: exact matches first, then like (% and _ in the term are plain "
          "characters here), then full-text by score, each "
          "entity once.", query=SearchQuerySchema, responses={200: SearchResultSchema},
          problems=_PROBLEMS)
def search_all(term: str, query: dict[str, Any]) -> Response:
    return _answer(service.search_all(current_actor(), term, filter_text=query.get("filter"),
                                      top=query.get("top")))


def _mode_view(mode: str, summary: str) -> None:
    def view(term: str, query: dict[str, Any]) -> Response:
        return _answer(service.search(current_actor(), mode, term,
                                      filter_text=query.get("filter"), top=query.get("top")))

    view.__name__ = f"search_{mode}"
    bp.add_url_rule(f"/search/{mode}/<path:term>", view_func=endpoint(
        summary, query=SearchQuerySchema, responses={200: SearchResultSchema},
        problems=_PROBLEMS)(view), methods=["GET"])


_mode_view(service.EXACT, "Entities whose id, name or barcode is the term.")
_mode_view(service.LIKE, "Entities whose id, name or barcode contains the term (ASCII case "
                         "folded; % and _ in the term are wildcards).")
_mode_view(service.FULLTEXT, "Full-text search over id, name, description, barcode, "
                             "attribute values, note text and file names: words AND-ed, "
                             "\"phrases\", word* prefixes.")


@bp.get("/query/freetext/<path:term>")
@endpoint("The full-text search of /api/search/fulltext.", query=SearchQuerySchema,
          responses={200: SearchResultSchema}, problems=_PROBLEMS)
def freetext(term: str, query: dict[str, Any]) -> Response:
    return _answer(service.search(current_actor(), service.FULLTEXT, term,
                                  filter_text=query.get("filter"), top=query.get("top")))
