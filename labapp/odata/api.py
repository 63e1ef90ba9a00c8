"""``/odata``: the OData v4 service document, ``$metadata`` and one feed per database view.

Authentication is the loader's (Basic with a password or PAT, Bearer, the browser cookie);
an anonymous caller gets 401 (an OData error, see :mod:`.errors`). Every response carries
``OData-Version: 4.0``.
"""
from __future__ import annotations

from flask import Blueprint, Response, current_app, request, stream_with_context

from labapp.errors import NotAuthenticated, NotFound
from labapp.odata.errors import ODATA_VERSION
from labapp.odata.feed import count_matching, open_feed
from labapp.odata.metadata import csdl, service_document
from labapp.odata.options import parse_options
from labapp.query.dbviews import ViewSpec, find_view
from labapp.web.loader import current_actor

JSON_MEDIA_TYPE = "application/json;odata.metadata=minimal;odata.streaming=true"

PREFIX = "/odata"
bp = Blueprint("odata", __name__, url_prefix=PREFIX)


@bp.before_request
def _signed_in() -> None:
    if not current_actor().is_authenticated:
        raise NotAuthenticated()


@bp.after_request
def _versioned(response: Response) -> Response:
    response.headers.update(ODATA_VERSION)
    return response


def _root() -> str:
    return request.host_url.rstrip("/") + request.script_root + PREFIX


def _view(name: str) -> ViewSpec:
    view = find_view(name)
    if view is None:
        raise NotFound(f"No entity set {name!r}; GET /odata lists them.", code="unknown_view")
    return view


@bp.get("")
@bp.get("/")
def service() -> Response:
    """The service document: the metadata URL and every view's EntitySet."""
    body = service_document(f"{_root()}/$metadata")
    return current_app.response_class(current_app.json.dumps(body), mimetype=JSON_MEDIA_TYPE)


@bp.get("/$metadata")
def metadata() -> Response:
    """The CSDL XML document describing every EntitySet."""
    return Response(csdl(), mimetype="application/xml")


@bp.get("/<name>")
def feed(name: str) -> Response:
    """A page of the view's rows the caller may read, streamed as it is read."""
    view = _view(name)
    options = parse_options(request.args)
    opened = open_feed(current_actor(), view, options,
                       page_size=current_app.config["LABAPP"]["ODATA_PAGE_SIZE"])
    base = f"{_root()}/{view.name}"
    context = f"{request.script_root}{PREFIX}/$metadata#{view.name}"
    return Response(stream_with_context(opened.chunks(context, base)),
                    mimetype=JSON_MEDIA_TYPE)


@bp.get("/<name>/$count")
def count(name: str) -> Response:
    """How many rows of the view the caller may read match ``$filter`` (plain text)."""
    view = _view(name)
    options = parse_options(request.args)
    return Response(str(count_matching(current_actor(), view, options)), mimetype="text/plain")
