"""Security headers on every response: pages, API answers, errors and static files.

The pages load nothing but their own files: no inline script, no ``style`` attributes, no
other origin (htmx runs under it because ``templates/base.html`` turns off its injected
indicator style). Nobody may frame a page, browsers must not guess content types, and links
to other sites carry no ``Referer``. A view that sets a stricter policy of its own (file
downloads: ``default-src 'none'; sandbox``) keeps it.
"""
from __future__ import annotations

from flask import Flask, Response

CONTENT_SECURITY_POLICY = "; ".join((
    "default-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
))
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    # frame-ancestors is the standard; X-Frame-Options covers browsers that predate it and
    # responses (downloads) whose own policy leaves frame-ancestors out.
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}


def add_security_headers(response: Response) -> Response:
    """``after_request``: the headers above, unless the view already chose its own."""
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    return response


def init_security_headers(app: Flask) -> None:
    app.after_request(add_security_headers)
