"""Saved view pages through the Flask client: the list's menu, saving, the view's page,
adding it to a dashboard, and the download links of the menu, page and widget."""
from __future__ import annotations

import html as markup
import io
import re
from collections.abc import Callable
from datetime import datetime
from urllib.parse import parse_qs, urlsplit

from flask import Flask
from flask.testing import FlaskClient
from openpyxl import load_workbook

from tests.conftest import ApiClient
from tests.dashboards.conftest import board
from tests.dashboards.conftest import created as created_board
from tests.entities.conftest import save
from tests.helpers.pages import html, post_form, signed_in
from tests.savedviews.conftest import created, listed, view


def _links(page: str, css_class: str) -> list[dict[str, list[str]]]:
    """The query of each link of ``css_class`` on the page."""
    hrefs = re.findall(rf'class="{css_class}" download href="([^"]+)"', page)
    return [parse_qs(urlsplit(markup.unescape(href)).query) for href in hrefs]


def test_the_menu_lists_the_visible_views_and_saves_the_current_query(
        app: Flask, member: Callable[..., ApiClient]) -> None:
    alice, bob = member("alice"), member("bob")
    mine = created(alice, view("Initial ones", filter="status eq 'Initial'",
                               columns=["name", "status"], orderby="name desc"))
    created(bob, view("Bob's own"))
    browser = signed_in(app, "alice")
    page = html(browser, "/entities/Sample?filter=name+eq+%27x%27&orderby=name+desc")
    assert 'id="saved-views-menu"' in page and ">Initial ones</a>" in page
    assert "Bob&#39;s own" not in page and "Bob's own" not in page
    save_link = markup.unescape(re.search(r'href="([^"]+)" id="save-view"', page).group(1))
    query = parse_qs(urlsplit(save_link).query)
    assert query["eClass"] == ["Sample"] and query["filter"] == ["name eq 'x'"]
    assert query["orderby"] == ["name desc"] and query["columns"][0].startswith("name,")
    [csv, xlsx] = _links(page, "export-csv") + _links(page, "export-xlsx")
    assert csv == {"$format": ["csv"], "$filter": ["status eq 'Initial'"],
                   "$select": ["name,status"], "$orderby": ["name desc"]}
    assert xlsx["$format"] == ["xlsx"]
    # Opened, the menu follows the table's current query form.
    fragment = html(browser, "/saved-views/menu/Sample?filter=status+eq+%27Done%27"
                             "&columns=name&columns=status")
    link = markup.unescape(re.search(r'href="([^"]+)" id="save-view"', fragment).group(1))
    assert parse_qs(urlsplit(link).query) == {"eClass": ["Sample"],
                                              "filter": ["status eq 'Done'"],
                                              "columns": ["name,status"]}
    assert f"/saved-views/{mine['id']}" in fragment


def test_saving_from_the_form_and_refusing_a_bad_filter(
        app: Flask, member: Callable[..., ApiClient]) -> None:
    alice = member("alice")
    member("bob")
    browser = signed_in(app, "alice")
    form = html(browser, "/saved-views/new?eClass=sample&filter=name+eq+%27x%27&columns=name")
    assert 'value="name eq &#39;x&#39;"' in form
    refused = post_form(browser, "/saved-views/new", {
        "eClass": "Sample", "name": "Bad", "filter": "name eq", "columns": "name"})
    assert refused.status_code == 400
    assert "at position 7" in refused.get_data(as_text=True)
    assert listed(alice) == []
    answer = post_form(browser, "/saved-views/new", {
        "eClass": "Sample", "name": "Mine", "filter": "name eq 'x'", "columns": "name",
        "orderby": "", "share_users": "bob"})
    assert answer.status_code == 303
    [stored] = alice.get("/api/saved-view").get_json()
    assert answer.headers["Location"].endswith(f"/saved-views/{stored['id']}")
    assert (stored["filter"], stored["columns"], stored["shares"]["userIDs"]) == (
        "name eq 'x'", ["name"], ["bob"])


def test_the_page_renames_adds_to_a_dashboard_and_deletes(
        app: Flask, member: Callable[..., ApiClient]) -> None:
    alice, bob = member("alice"), member("bob")
    save(alice, {"eClass": "Sample", "name": "one"}, {"eClass": "Sample", "name": "two"})
    stored = created(alice, view("Ones", filter="name eq 'one'", columns=["name", "status"],
                                 orderby="name desc", userIDs=["bob"]))
    target = created_board(alice, board("Lab", []))
    created_board(bob, board("Bob's"))
    browser = signed_in(app, "alice")
    url = f"/saved-views/{stored['id']}"
    page = html(browser, url)
    assert 'id="view-form"' in page and 'id="delete-view"' in page
    assert '<option value="' + target["id"] + '">Lab</option>' in page
    assert "Bob&#39;s" not in page  # only dashboards alice may change are offered
    [csv] = _links(page, "export-csv")
    assert csv["$filter"] == ["name eq 'one'"] and csv["$select"] == ["name,status"]
    # Bob sees it, may neither change nor delete it.
    bobs = html(signed_in(app, "bob"), url)
    assert 'id="view-form"' not in bobs and 'id="delete-view"' not in bobs
    assert post_form(browser, url, {"name": "Renamed", "filter": "name eq 'one'",
                                    "columns": "name,status",
                                    "orderby": "name desc"}).status_code == 303
    assert alice.get(f"/api/saved-view/{stored['id']}").get_json()["name"] == "Renamed"
    assert listed(bob) == []  # no longer shared: the form chose nobody
    added = post_form(browser, f"{url}/add-to-dashboard", {"dashboard_id": target["id"]})
    assert added.status_code == 303
    assert added.headers["Location"].endswith(f"/dashboards/{target['id']}#widget-0")
    [widget] = alice.get("/api/dashboard").get_json()[0]["widgets"]
    assert widget["header"] == "Renamed" and widget["plugin"]["plugin"] == "saved-list"
    assert widget["gridster"] == {"x": 0, "y": 0, "cols": 6, "rows": 4}
    assert widget["config"]["filter"] == "name eq 'one'"
    assert widget["config"]["orderby"] == "name desc"
    body = html(browser, f"/dashboards/{target['id']}/widget/0")
    assert ">one</a>" in body and ">two</a>" not in body
    [csv] = _links(body, "export-csv")
    assert csv == {"$format": ["csv"], "$filter": ["name eq 'one'"],
                   "$select": ["name,status"], "$orderby": ["name desc"]}
    assert 'aria-label="CSV of Renamed"' in body  # named after the widget, one per widget
    post_form(browser, f"{url}/add-to-dashboard", {"dashboard_id": target["id"]})
    widgets = alice.get("/api/dashboard").get_json()[0]["widgets"]
    assert widgets[1]["gridster"] == {"x": 6, "y": 0, "cols": 6, "rows": 4}
    deleted = post_form(browser, f"{url}/delete", {})
    assert deleted.status_code == 303 and listed(alice) == []


def test_a_views_xlsx_download_holds_numbers_and_dates(
        app: Flask, member: Callable[..., ApiClient]) -> None:
    """The page's and the saved list's XLSX links answer cells a spreadsheet sums and
    filters (issue 32 §5): the unit in the header, numbers and date cells."""
    alice = member("alice")
    save(alice, {"eClass": "Sample", "name": "vial 1", "amount": 180, "unit": "µL",
                 "dateTaken": "2026-03-05"},
         {"eClass": "Sample", "name": "vial 2", "amount": 2.5, "unit": "µL"})
    stored = created(alice, view("Vials", filter="startswith(name, 'vial')",
                                 columns=["name", "amount", "dateTaken"], orderby="name"))
    target = created_board(alice, board("Lab", []))
    browser = signed_in(app, "alice")
    post_form(browser, f"/saved-views/{stored['id']}/add-to-dashboard",
              {"dashboard_id": target["id"]})
    for page in (html(browser, f"/saved-views/{stored['id']}"),
                 html(browser, f"/dashboards/{target['id']}/widget/0")):
        [href] = re.findall(r'class="export-xlsx" download href="([^"]+)"', page)
        response = browser.get(markup.unescape(href))
        assert response.status_code == 200, response.get_data(as_text=True)
        rows = list(load_workbook(io.BytesIO(response.get_data()))["Sample"].iter_rows())
        assert [cell.value for cell in rows[0]] == ["ID", "Name", "Amount (µL)",
                                                    "Date taken"]
        assert [(row[1].value, row[2].value, row[2].data_type) for row in rows[1:]] == [
            ("vial 1", 180, "n"), ("vial 2", 2.5, "n")]
        assert rows[1][3].is_date and rows[1][3].value == datetime(2026, 3, 5)
        assert rows[2][3].value is None


def test_adding_to_a_dashboard_of_someone_else_is_refused(
        app: Flask, member: Callable[..., ApiClient]) -> None:
    alice, bob = member("alice"), member("bob")
    stored = created(alice, view("Mine"))
    theirs = created_board(bob, board("Bob's", userIDs=["alice"]))
    browser = signed_in(app, "alice")
    answer = post_form(browser, f"/saved-views/{stored['id']}/add-to-dashboard",
                       {"dashboard_id": theirs["id"]})
    assert answer.status_code == 403
    assert bob.get("/api/dashboard").get_json()[0]["widgets"] == []
    hidden: FlaskClient = signed_in(app, "bob")
    assert hidden.get(f"/saved-views/{stored['id']}").status_code == 404


def test_the_page_names_the_owner_and_whom_the_view_is_shared_with(
        app: Flask, member: Callable[..., ApiClient], department: Callable[..., str]) -> None:
    """Issue 32 §5: names, not ids ("shared with DEP00002")."""
    physics = department("Physics")
    alice = member("alice")
    member("bob")
    stored = created(alice, view("Shared", userIDs=["bob"], departmentIDs=[physics],
                                 userRoles=["ADMIN"]))
    page = html(signed_in(app, "alice"), f"/saved-views/{stored['id']}")
    owner = re.search(r'<dd id="view-owner">(.*?)</dd>', page, re.S).group(1)
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", owner)).strip()
    assert text == (f"Alice alice · shared with Bob bob, Physics {physics}, the role ADMIN")
    assert f'<a href="/entities/Department/{physics}">Physics</a>' in owner
    personal = created(alice, view("Mine"))
    page = html(signed_in(app, "alice"), f"/saved-views/{personal['id']}")
    assert re.search(r'<dd id="view-owner"><a href="/entities/User/alice">Alice</a> '
                     r'<span class="muted ref-id">alice</span> · personal</dd>', page)
