"""The bell and the notification list through the Flask client."""
from __future__ import annotations

import re
from collections.abc import Callable

from flask import Flask

from tests.conftest import ApiClient
from tests.entities.conftest import save
from tests.helpers.pages import html, post_form, signed_in
from tests.notifications.conftest import unread


def test_bell_counts_and_the_list_marks_and_opens(app: Flask,
                                                  member: Callable[..., ApiClient]) -> None:
    alice, bob = member("alice"), member("bob")
    request = save(alice, {"eClass": "Request", "name": "Calibrate", "assigneeID": "bob"},
                   {"eClass": "Request", "name": "Clean", "assigneeID": "bob"})[0]
    browser = signed_in(app, "bob")
    page = html(browser, "/")
    assert 'hx-get="/notifications/bell"' in page and 'hx-trigger="load, every 30s"' in page
    bell = html(browser, "/notifications/bell")
    assert ">2</span>" in bell and 'hx-trigger="every 30s"' in bell
    listing = html(browser, "/notifications")
    assert "Calibrate" in listing and "2 unread" in listing
    first_id = re.search(r'href="/notifications/([0-9a-f]+)/open"[^>]*>[^<]*Calibrate',
                         listing).group(1)
    opened = browser.get(f"/notifications/{first_id}/open")
    assert opened.status_code == 303
    assert opened.headers["Location"] == f"/entities/Request/{request['id']}"
    assert ">1</span>" in html(browser, "/notifications/bell")
    assert post_form(browser, "/notifications/seen").status_code == 303
    assert ">0</span>" in html(browser, "/notifications/bell")
    [left] = [n for n in unread(bob) if n["status"] == "Seen"]
    assert post_form(browser, f"/notifications/{left['id']}/read").status_code == 303
    assert unread(bob) == []


def test_others_cannot_touch_a_notification(app: Flask,
                                            member: Callable[..., ApiClient]) -> None:
    alice, bob = member("alice"), member("bob")
    save(alice, {"eClass": "Request", "name": "Calibrate", "assigneeID": "bob"})
    [note] = unread(bob)
    browser = signed_in(app, "alice")
    assert browser.get(f"/notifications/{note['id']}/open").status_code == 404
    assert post_form(browser, f"/notifications/{note['id']}/read").status_code == 404
    assert unread(bob)[0]["status"] == "Unread"
