"""Rendering a page, or for an htmx request only one named block of it.

One template per page: the fragments htmx swaps in are named blocks of that page, rendered
alone. A block rendered alone sees the view's context and the app's context processors and
globals, but nothing the page sets outside the block (top-level ``set`` or macros).
"""
from __future__ import annotations

from typing import Any

from flask import Response, current_app, render_template, request


def is_htmx() -> bool:
    """True for requests htmx sends to swap part of a page.

    Boosted navigation and history restores also carry ``HX-Request`` but want whole pages.
    """
    headers = request.headers
    return (headers.get("HX-Request") == "true" and headers.get("HX-Boosted") != "true"
            and headers.get("HX-History-Restore-Request") != "true")


def render_block(template_name: str, block: str, **context: Any) -> str:
    """Render the block ``block`` of ``template_name`` alone; KeyError when it has none."""
    template = current_app.jinja_env.get_or_select_template(template_name)
    current_app.update_template_context(context)
    return "".join(template.blocks[block](template.new_context(context)))


def render_page(template_name: str, block: str | None = None, status: int = 200,
                **context: Any) -> Response:
    """The whole page, or just its block ``block`` when htmx asks (see :func:`is_htmx`)."""
    if block is not None and is_htmx():
        body = render_block(template_name, block, **context)
    else:
        body = render_template(template_name, **context)
    response = current_app.make_response((body, status))
    if block is not None:
        response.vary.add("HX-Request")
    return response
