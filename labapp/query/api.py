"""``/api/query``: database views and datasets (the lookups live in ``lookup_api.py``)."""
from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify

from labapp.errors import NotFound
from labapp.query.dataset import run_dataset
from labapp.query.dbviews import find_view
from labapp.query.rows import list_view
from labapp.query.schemas import (
    DATASET_BODY,
    ViewPageSchema,
    ViewQuerySchema,
    load_queries,
)
from labapp.web.endpoints import endpoint, json_payload
from labapp.web.loader import current_actor
from labapp.web.units import reads

bp = Blueprint("query_api", __name__, url_prefix="/api/query")


@bp.get("/view/<name>")
@endpoint("A page of a database view's visible rows (at most 500), with OData options.",
          query=ViewQuerySchema, responses={200: ViewPageSchema})
def view_rows(name: str, query: dict[str, Any]) -> Response:
    view = find_view(name)
    if view is None:
        raise NotFound(f"No view {name!r}.", code="unknown_view")
    page = list_view(current_actor(), view, filter_text=query.get("filter"),
                     orderby=query.get("orderby"), select_text=query.get("select"),
                     top=query.get("top"), skip=query.get("skip"))
    return jsonify(page.to_json())


@bp.post("/dataset")
@reads
@endpoint("Run inter-related queries. The body is a JSON array of queries, each with "
          "collection or entity (its result key), eClass or view, and optional sortings, "
          "filters and select; the answer is an object keyed by result key.",
          forms={"application/json": DATASET_BODY},
          responses={200: "Results keyed by each query's collection or entity name"})
def dataset() -> Response:
    queries = load_queries(json_payload())
    return jsonify(run_dataset(current_actor(), queries))
