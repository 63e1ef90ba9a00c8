"""A page's address asked without htmx (a browser without JavaScript, an address opened or
shared) answers a whole page, a redirect to one, or — for the few fragments meant to be
fetched alone — the fragment; never a 500 from a fragment's template rendered as a page
without its context (issue 32 §3: ``/search/suggest?q=x`` did)."""
from __future__ import annotations

from flask import Flask
from flask.testing import FlaskClient

from tests.helpers.routes import route_requests

# Fragments a plain request gets as they are: the bell's count and the lists a widget, a
# menu or a picker loads (a saved list's page link is followed without JavaScript too).
FRAGMENTS = {"notification_views.bell", "saved_view_views.menu", "grant_views.grantees",
             "entity_views.unique", "storage_views.children", "dashboard_views.widget"}
HTMX = {"HX-Request": "true"}


def _pages(app: Flask, world: dict[str, str]) -> list[tuple[str, str]]:
    """``(endpoint, url)`` of every GET route of the HTML face, with a search term."""
    return [(rule.endpoint, f"{url}{'&' if '?' in url else '?'}q=Bro")
            for method, url, rule in route_requests(app, world)
            if method == "GET" and not url.startswith(("/api/", "/odata", "/static/"))]


def test_a_plain_request_answers_a_page_a_redirect_or_a_named_fragment(
        app: Flask, admin: FlaskClient, world: dict[str, str]) -> None:
    fragments = set()
    for endpoint, url in _pages(app, world):
        for headers in ({}, HTMX):
            response = admin.get(url, headers=headers)
            response.close()
            assert response.status_code < 500, (url, headers, response.status_code)
        plain = admin.get(url)
        plain.close()
        if plain.status_code == 200 and plain.mimetype == "text/html" \
                and "<html" not in plain.get_data(as_text=True):
            fragments.add(endpoint)
    assert fragments == FRAGMENTS
