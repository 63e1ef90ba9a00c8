"""Dashboard pages through the Flask client: home = default dashboard, widgets, editor."""
from __future__ import annotations

import re
from collections.abc import Callable

from flask import Flask

from tests.conftest import ApiClient
from tests.dashboards.conftest import board, created, listed, widget
from tests.entities.conftest import save
from tests.helpers.pages import html, post_form, signed_in


def test_home_is_a_starter_dashboard_made_once(app: Flask,
                                               member: Callable[..., ApiClient]) -> None:
    alice = member("alice")
    browser = signed_in(app, "alice")
    page = html(browser, "/")
    assert browser.get("/").headers["Cache-Control"] == "no-store"
    assert 'id="dashboard-title">My dashboard<' in page
    assert 'id="entities-card-link"' in page  # the area cards stay on the home page
    # Under the welcome (h1) and the dashboard's name (h2), widget titles are level 3 and
    # the headings inside a widget level 4 (axe heading-order, issue 32 §5).
    widget_urls = re.findall(r'hx-get="(/dashboards/[0-9a-f]+/widget/\d+)\?heading=4"', page)
    assert page.count('<h3 class="widget-title"') == 5
    assert len(widget_urls) == 5
    html(browser, "/")
    assert listed(alice) == ["My dashboard"]
    for url in widget_urls:
        assert html(browser, url)  # every starter widget renders


def test_chart_widget_is_svg_with_patterns_labels_and_a_table(
        app: Flask, member: Callable[..., ApiClient]) -> None:
    alice = member("alice")
    save(alice, {"eClass": "Sample", "name": "one"}, {"eClass": "Sample", "name": "two"})
    stored = created(alice, board("Charts", [
        widget("status-counts", {"eClass": "Sample"}),
        widget("created-per-week", {"eClass": "Sample", "weeks": 3}, x=6)]))
    browser = signed_in(app, "alice")
    page = html(browser, f"/dashboards/{stored['id']}")
    assert "gx-6 gw-6 gy-0 gh-4" in page and 'style="' not in page
    bars = html(browser, f"/dashboards/{stored['id']}/widget/0")
    assert "<svg" in bars and 'fill="url(#p0-solid)"' in bars and 'fill="url(#p0-hatch)"' in bars
    assert "<title>Initial: 2</title>" in bars
    assert '<th scope="row">Initial</th><td>2</td>' in bars
    lines = html(browser, f"/dashboards/{stored['id']}/widget/1")
    assert "<polyline" in lines and lines.count('<th scope="row">') == 3


def test_saved_list_pages_and_note_is_sanitised(app: Flask,
                                                member: Callable[..., ApiClient]) -> None:
    alice = member("alice")
    save(alice, *({"eClass": "Sample", "id": f"S-{i}", "name": f"n{i}"} for i in range(3)))
    stored = created(alice, board("List", [
        widget("saved-list", {"eClass": "Sample", "columns": ["id", "name"], "top": 2}),
        widget("note", {"markdown": "**bold** <script>alert(1)</script>"})]))
    browser = signed_in(app, "alice")
    first = html(browser, f"/dashboards/{stored['id']}/widget/0")
    assert 'href="/entities/Sample/S-0"' in first and "S-2" not in first
    assert "Page 1" in first and "?page=1" in first
    second = html(browser, f"/dashboards/{stored['id']}/widget/0?page=1")
    assert "S-2" in second and "S-0" not in second and "?page=2" not in second
    note = html(browser, f"/dashboards/{stored['id']}/widget/1")
    assert "<strong>bold</strong>" in note and "<script>" not in note


def test_editor_creates_shares_and_reports_errors(app: Flask,
                                                  member: Callable[..., ApiClient]) -> None:
    member("alice")
    bob = member("bob")
    browser = signed_in(app, "alice")
    form = html(browser, "/dashboards/new")
    assert 'name="share_users"' in form and '<option value="bob">' in form
    bad = post_form(browser, "/dashboards/new", {
        "name": "Mine", "w0-plugin": "status-counts", "w0-x": "0", "w0-y": "0",
        "w0-cols": "20", "w0-rows": "4", "w0-eclass": "Sample"})
    assert bad.status_code == 400
    assert "Widget &#39;Entities by status&#39;: width: " in bad.get_data(as_text=True)
    assert listed(bob) == []
    good = post_form(browser, "/dashboards/new", {
        "name": "Mine", "w0-plugin": "status-counts", "w0-x": "0", "w0-y": "0",
        "w0-cols": "6", "w0-rows": "4", "w0-eclass": "Sample", "share_users": "bob"})
    assert good.status_code == 303
    assert listed(bob) == ["Mine"]
    board_id = good.headers["Location"].rsplit("/", 1)[1]
    edit = html(browser, f"/dashboards/{board_id}/edit")
    assert '<option value="bob" selected>' in edit
    # bob sees it but may not edit it
    assert signed_in(app, "bob").get(f"/dashboards/{board_id}/edit").status_code == 403
    removed = post_form(browser, f"/dashboards/{board_id}/edit", {"name": "Mine"})
    assert removed.status_code == 303
    assert listed(bob) == []


def test_others_cannot_open_a_private_dashboard(app: Flask,
                                                member: Callable[..., ApiClient]) -> None:
    alice = member("alice")
    member("bob")
    stored = created(alice, board("Private", [widget("note", {"markdown": "x"})]))
    bob = signed_in(app, "bob")
    assert bob.get(f"/dashboards/{stored['id']}").status_code == 404
    assert bob.get(f"/dashboards/{stored['id']}/widget/0").status_code == 404
    assert post_form(bob, f"/dashboards/{stored['id']}/delete").status_code == 404


def test_the_page_draws_narrow_charts_at_their_minimum_or_as_tables_and_closes_gaps(
        app: Flask, member: Callable[..., ApiClient]) -> None:
    """Issue 32 §5: widths the API stores from earlier clients are drawn readably."""
    alice = member("alice")
    stored = created(alice, board("Older", [
        widget("status-counts", {"eClass": "Sample"}, x=10, cols=2),
        widget("note", {"markdown": "left"}, x=0, cols=4),
        widget("created-per-week", {"eClass": "Sample"}, x=0, y=30, cols=3),
        widget("note", {"markdown": "right"}, x=3, y=30, cols=9)]))
    page = html(signed_in(app, "alice"), f"/dashboards/{stored['id']}")
    sections = re.findall(r'<section class="card widget ([^"]+)"', page)
    assert sections == ["gx-6 gw-6 gy-0 gh-4", "gx-0 gw-4 gy-0 gh-4",
                        "gx-0 gw-3 gy-4 gh-4", "gx-3 gw-9 gy-4 gh-4"]
    urls = re.findall(r'hx-get="(/dashboards/[0-9a-f]+/widget/\d+[^"]*)"', page)
    assert urls[0].endswith("/widget/0?heading=3") and urls[2].endswith("?heading=3&amp;table=1")
    assert page.count('<h2 class="widget-title"') == 4
