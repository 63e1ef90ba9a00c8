"""The Content-Security-Policy in real headless Chromium: every page of the application loads
without a violation (the ``page`` fixture fails the test on any), and htmx still swaps, posts
and pushes under it (fixtures and skip rules in ``conftest.py``)."""
from __future__ import annotations

import re

from flask import Flask, url_for
from playwright.sync_api import Page, expect

from labapp.web.headers import CONTENT_SECURITY_POLICY
from tests.browser.conftest import BROWSER_MARKS, USERNAME, create_entities
from tests.conftest import ADMIN_PASSWORD, DEFAULT_DEPARTMENT
from tests.helpers.browser import log_in_as

pytestmark = BROWSER_MARKS


def page_addresses(app: Flask, values: dict[str, str]) -> list[str]:
    """Every page of ``app``: each GET route outside ``/api``, ``/odata`` and ``/static``,
    filled in. (The feeds are data: Chromium shows ``$metadata`` in its own XML viewer, whose
    inline styles the policy rightly blocks; ``tests/web/test_security_headers.py`` checks
    their headers.)"""
    with app.test_request_context():
        return sorted({url_for(rule.endpoint, **{name: values[name] for name in rule.arguments})
                       for rule in app.url_map.iter_rules()
                       if "GET" in rule.methods and rule.endpoint != "static"
                       and not rule.rule.startswith(("/api/", "/odata"))})


def test_every_page_loads_without_a_policy_violation(page: Page, live_app: Flask,
                                                     live_server: str) -> None:
    experiment, step, sample, location = create_entities(
        live_server,
        {"eClass": "Experiment", "id": "#exp", "name": "Growth curve"},
        {"eClass": "Step", "id": "#step", "name": "Inoculate", "experimentID": "#exp"},
        {"eClass": "Sample", "name": "Broth", "stepID": "#step", "amount": 2.5, "unit": "mL"},
        {"eClass": "Location", "name": "Shelf", "rows": 2, "columns": 3})
    addresses = page_addresses(live_app, {
        "eclass": "Sample", "entity_id": sample["id"], "area_slug": "departments",
        "target_id": DEFAULT_DEPARTMENT, "user_id": USERNAME, "field": "name",
        # Dashboards and notifications (issue 12): "/" shows a real dashboard; unknown ids
        # load the error page.
        "dashboard_id": "none", "index": 0, "notification_id": "none",
        "location_id": location["id"],  # storage (issue 11): a box drawn as a grid
        "term": "Broth", "name": "SampleOverview",  # search (issue 10), feeds (issue 13)
        "job_id": "none", "token": "none",  # imports (issue 22): the error page
        "view_id": "none", "rule_id": "none",  # saved views, alert rules: the error page
        "hook_id": "none"})  # webhooks (issue 36): the error page
    assert "/entities/Sample/new" in addresses and "/admin/users" in addresses

    log_in_as(page, live_server, "admin", ADMIN_PASSWORD)
    extra = [f"/entities/Experiment/{experiment['id']}", f"/entities/Step/{step['id']}",
             "/entities/Sample?orderby=name", "/entities/Nonsense"]
    for address in addresses + extra:
        response = page.goto(address)
        assert response is not None, address
        assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY, address
        page.wait_for_load_state("load")
    expect(page.locator(".problem-title")).to_be_visible()

    # Logged out, the login page and the pages sending visitors to it.
    page.click("#logout-button")
    page.wait_for_url(f"{live_server}/login")
    page.goto("/entities")
    page.wait_for_url(re.compile(r"/login\?next=/entities$"))


def test_htmx_swaps_posts_and_pushes_under_the_policy(page: Page, live_server: str) -> None:
    create_entities(live_server, *({"eClass": "Sample", "name": f"Tube {number:02d}"}
                                   for number in range(55)))
    (parent,) = create_entities(live_server, {"eClass": "Sample", "name": "Rack"})
    log_in_as(page, live_server, USERNAME, "correct horse battery")
    page.goto("/entities/Sample?orderby=name")
    page.evaluate("window.sameDocument = true")

    # A GET swap that pushes the address, and a 400 answer swapped in place.
    page.click("#next-page")
    expect(page.locator("#table-summary")).to_have_text("Showing 51–56 of 56")
    assert "skip=50&skiptoken=" in page.url  # the keyset position rides along (issue 24)
    page.click("#filter-raw summary")  # the $filter box, under the filter builder
    page.fill("#filter", "name eq")
    page.click("#table-query button[type=submit]")
    expect(page.locator("#filter-error")).to_contain_text("at position")

    # An htmx POST carrying the CSRF header from hx-headers.
    assert page.evaluate("window.sameDocument") is True
    page.goto(f"/entities/Sample/{parent['id']}")
    page.evaluate("window.sameDocument = true")
    page.fill("#note-content", "Checked under the policy")
    page.click("#note-form button[type=submit]")
    expect(page.locator("#notes .note-content")).to_have_text("Checked under the policy")
    assert page.evaluate("window.sameDocument") is True
    expect(page.locator("#htmx-error")).to_have_count(0)
