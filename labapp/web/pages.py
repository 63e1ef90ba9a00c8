"""What every page blueprint of signed-in users shares: the login redirect, no caching, and
the scope check of a page."""
from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any
from urllib.parse import urlsplit

from flask import Blueprint, Response, redirect, request, url_for
from werkzeug.wrappers import Response as BaseResponse

from labapp.access.actor import Actor
from labapp.errors import Forbidden
from labapp.web.blocks import is_htmx
from labapp.web.loader import current_actor

View = Callable[..., BaseResponse]


def signed_in_only(back_to: str | None = None) -> BaseResponse | None:
    """None for a signed-in visitor; else the way to the login page, which then brings the
    visitor to ``back_to`` (by default the page asked for, when it was a GET; for an htmx
    request, the page it was sent from). An htmx request is told to move the whole page
    there.

    The one login check of every page: as a blueprint's ``before_request`` (see
    :func:`members_only`), through :func:`login_required`, or called by a view.
    """
    if current_actor().is_authenticated:
        return None
    if back_to is None and is_htmx():
        back_to = _page_of_htmx_request()
    if back_to is None and request.method == "GET":
        back_to = request.full_path.rstrip("?")
    home = url_for("web.home")
    target = url_for("account_views.login", next=back_to if back_to != home else None)
    if is_htmx():
        # A redirect would be followed by the XHR and swap the login page into the block.
        return Response(status=204, headers={"HX-Redirect": target})
    return redirect(target)


def _page_of_htmx_request() -> str | None:
    """The path and query of the page an htmx request was sent from (its ``HX-Current-URL``)
    when that page is on this site: the login brings the visitor back to the page, not to
    the fragment it was loading (a dashboard's widget, a list's rows)."""
    page = urlsplit(request.headers.get("HX-Current-URL", ""))
    if page.netloc != request.host or not page.path.startswith("/"):
        return None
    return page.path + (f"?{page.query}" if page.query else "")


def no_store(response: Response) -> Response:
    """``after_request``: pages of restricted data with CSRF tokens in their forms are never
    cached."""
    response.headers["Cache-Control"] = "no-store"
    return response


def members_only(blueprint: Blueprint) -> Blueprint:
    """Put ``blueprint``'s pages behind the login (:func:`signed_in_only`), never cached."""
    blueprint.before_request(signed_in_only)
    blueprint.after_request(no_store)
    return blueprint


def login_required(back_to: str) -> Callable[[View], View]:
    """Guard one view with :func:`signed_in_only`; after logging in, go to the endpoint
    ``back_to``."""
    def decorate(view: View) -> View:
        @wraps(view)
        def guarded(*args: Any, **kwargs: Any) -> BaseResponse:
            return signed_in_only(url_for(back_to)) or view(*args, **kwargs)
        return guarded
    return decorate


def require(actor: Actor, scopes: tuple[str, ...]) -> None:
    """Raise 403 (the error page) unless the actor holds one of ``scopes``, as the API's
    ``require_scope`` does."""
    if not actor.holds_any(scopes):
        raise Forbidden(f"This page requires the scope {' or '.join(scopes)}.",
                        code="missing_scope")
