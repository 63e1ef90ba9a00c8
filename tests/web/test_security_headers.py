"""Every response carries the security headers: each route of the URL map, asked by an
anonymous visitor and by the signed-in administrator, in success and in error, plus static
files and unknown addresses. File downloads keep their own sandboxing policy."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from labapp.web.headers import CONTENT_SECURITY_POLICY
from tests.helpers.routes import route_requests

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
# What the policy would block: inline script (a <script> without src, on…= handlers,
# javascript: links, htmx's hx-on) and inline style (<style>, style="…").
INLINE = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>|<style\b|\sstyle=|\son[a-z]+=|\shx-on[:-]"
                    r"|javascript:", re.IGNORECASE)
EVERYWHERE = {"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff",
              "Referrer-Policy": "same-origin"}
DOWNLOAD_POLICY = "default-src 'none'; sandbox"
_SAFE = ("GET", "HEAD", "OPTIONS")


def assert_secured(response: TestResponse, what: str,
                   policy: str = CONTENT_SECURITY_POLICY) -> None:
    headers = {name: response.headers.get(name) for name in EVERYWHERE}
    assert headers == EVERYWHERE, what
    assert response.headers.get("Content-Security-Policy") == policy, what


def test_the_policy_allows_only_own_files_and_no_framing():
    directives = dict(part.strip().split(" ", 1) for part in CONTENT_SECURITY_POLICY.split(";"))
    assert directives["default-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'"
    assert "unsafe" not in CONTENT_SECURITY_POLICY
    assert not {"script-src", "style-src"} & set(directives), "default-src covers both"


@pytest.mark.parametrize("template", sorted(TEMPLATES.rglob("*.html")),
                         ids=lambda path: str(path.relative_to(TEMPLATES)))
def test_templates_hold_nothing_the_policy_blocks(template: Path):
    markup = re.sub(r"\{#.*?#\}", "", template.read_text(encoding="utf-8"), flags=re.S)
    assert INLINE.findall(markup) == []


def _send(client: FlaskClient, method: str, url: str, **kwargs: Any) -> TestResponse:
    response = client.open(url, method=method, **kwargs)
    response.close()
    return response


def test_every_route_answers_with_the_headers(app, client, admin, world):
    anonymous_statuses, failed_gets = set(), set()
    for method, url, rule in route_requests(app, world):
        anonymous = _send(client, method, url)
        assert_secured(anonymous, f"anonymous {method} {url}")
        anonymous_statuses.add(anonymous.status_code)
        # Signed in: every GET succeeds or fails on its merits; writes without the CSRF
        # token are refused (403) before they change anything.
        signed_in = _send(admin, method, url)
        download = rule.endpoint == "file_api.download_file" and method in _SAFE
        assert_secured(signed_in, f"admin {method} {url} ({signed_in.status_code})",
                       DOWNLOAD_POLICY if download else CONTENT_SECURITY_POLICY)
        if method == "GET" and signed_in.status_code >= 400:
            failed_gets.add(rule.endpoint)
    assert {302, 401, 403} <= anonymous_statuses
    # Successes, redirects and errors were all checked; ``field`` is ``name``, which the
    # suggestion fragment refuses (404) as it is no reference; ``filename`` is ``app.css``,
    # which is no export (404); saving a view needs the list's class (400 without one); the
    # shared application has no OpenID Connect provider (404 for any name).
    assert failed_gets == {"entity_views.suggest", "export_api.download",
                           "saved_view_views.create", "oidc_views.oidc_start",
                           "oidc_views.oidc_callback"}


@pytest.mark.parametrize("path", ["/static/app.js", "/no/such/page", "/api/no/such/thing",
                                  "/healthz", "/login", "/favicon.ico"])
def test_static_files_unknown_addresses_and_public_pages(client, path):
    response = client.get(path)
    response.close()
    assert_secured(response, path)


def test_a_server_error_page_carries_the_headers(fresh_app):
    broken = fresh_app()
    broken.config["PROPAGATE_EXCEPTIONS"] = False

    @broken.get("/boom")
    def boom():
        raise RuntimeError("boom")

    response = broken.test_client().get("/boom")
    assert response.status_code == 500
    assert_secured(response, "500 page")
