"""Alert rule pages in real headless Chromium (issue 23), at 1366 and 768 px: carol makes a
rule with the form (class, a filter condition added with the entity list's filter builder and
tested with the Test button: "1 item matches now", recipients picked, channels, cadence),
sees it listed, switches it off and on with the keyboard; the pages say e-mail is off, pass
axe-core and never scroll sideways; an evaluation puts the rule's line (naming her as its
owner) in her bell, which opens the rule. Issue 32: the example rule (expiring within 14
days) starts from the list and is saved with Enter; a rule's owner sees its failed e-mail
deliveries on the rule's page and in the outbox."""
from __future__ import annotations

import re

import pytest
from flask import Flask
from playwright.sync_api import Page, expect
from sqlalchemy import update

from labapp.alerts.evaluate import evaluate
from labapp.alerts.mail import queue
from labapp.db import db, transaction
from labapp.model import MailMessage
from labapp.model.types import utc_now
from tests.browser.axe import assert_no_serious_violations
from tests.browser.conftest import BROWSER_MARKS, create_entities, log_in
from tests.conftest import ADMIN_PASSWORD

pytestmark = BROWSER_MARKS

WIDTHS = (1366, 768)


def _no_horizontal_scroll(page: Page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth <= "
                         "document.documentElement.clientWidth")


@pytest.mark.parametrize("width", WIDTHS)
def test_make_test_switch_and_be_told(page: Page, live_app: Flask, live_server: str,
                                      width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    create_entities(live_server,
                    {"eClass": "Sample", "name": "Nearly empty tube", "amount": 1.0,
                     "unit": "mL"},
                    {"eClass": "Sample", "name": "Full tube", "amount": 80.0, "unit": "mL"})
    log_in(page, live_server)
    page.click("#alerts-link")
    expect(page.locator("h1")).to_have_text("Alert rules")
    expect(page.locator("#mail-off")).to_contain_text("E-mail is off")
    expect(page.locator("#no-rules")).to_be_visible()

    page.click("#new-rule")
    # The builder's script listens for a chosen field once the page has loaded.
    page.wait_for_load_state()
    page.fill("#rule-name", "Running low")
    expect(page.locator("#rule-eClass")).to_have_value("Sample")
    # The filter builder: a field, its condition and a value; Enter in the value adds it.
    page.select_option("#builder-field", "amount")
    page.select_option("#builder-op", "le")
    page.fill("#builder-value", "5")
    page.press("#builder-value", "Enter")
    expect(page.locator(".filter-chips .chip-label")).to_have_text(["Amount ≤ 5"])
    expect(page.locator("#builder-field")).to_be_focused()
    expect(page.locator("#rule-name")).to_have_value("Running low")
    page.click("#test-rule")
    expect(page.locator("#test-count")).to_contain_text("1 item matches now")
    expect(page.locator("#test-result")).to_contain_text("Nearly empty tube")
    page.click("#rule-filter-raw summary")
    expect(page.locator("#rule-filter")).to_have_value("amount le 5")
    page.fill("#rule-filter", "amount lt")
    page.click("#test-rule")
    expect(page.locator("#test-error")).to_be_visible()
    page.fill("#rule-filter", "amount le 5")
    expect(page.locator("#rule-userIDs option:checked")).to_have_count(1)  # carol herself
    # Recipients through the searchable pickers: carol's chip, then a role chosen by keyboard.
    expect(page.locator(".recipients .chip")).to_have_count(1)
    page.fill("#rule-userRoles-search", "adm")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    expect(page.locator(".recipients .chip")).to_have_count(2)
    expect(page.locator("#rule-userRoles option:checked")).to_have_count(1)
    page.locator("#rule-userRoles").locator("xpath=..").get_by_role(
        "button", name=re.compile("^Remove ")).click()  # and taken back: carol alone is told
    expect(page.locator("#rule-userRoles option:checked")).to_have_count(0)
    expect(page.locator("#mail-off")).to_be_visible()
    page.check("#rule-channel-email")
    page.check("#rule-cadence-immediate")
    _no_horizontal_scroll(page)
    assert_no_serious_violations(page)
    page.click("#save-rule")

    row = page.locator(".rule-row")
    expect(row).to_have_count(1)
    expect(row.locator(".rule-name")).to_have_text("Running low")
    switch = row.get_by_role("switch")
    expect(switch).to_have_attribute("aria-checked", "true")
    _no_horizontal_scroll(page)
    assert_no_serious_violations(page)
    switch.focus()
    page.keyboard.press("Enter")
    expect(page.locator(".rule-row").get_by_role("switch")).to_have_attribute(
        "aria-checked", "false")
    page.locator(".rule-row").get_by_role("switch").focus()
    page.keyboard.press("Space")
    expect(page.locator(".rule-row").get_by_role("switch")).to_have_attribute(
        "aria-checked", "true")

    with live_app.app_context():
        assert evaluate().notifications == 1
    page.goto("/notifications")
    item = page.locator(".open-subject",
                        has_text="Running low: 1 sample · rule of Carol Chemist (carol)")
    expect(item).to_be_visible()
    item.click()
    expect(page.locator("h1")).to_have_text("Running low")
    expect(page.locator("#rule-items")).to_contain_text("Nearly empty tube")
    assert_no_serious_violations(page)
    page.click("#edit-rule")
    expect(page.locator("#rule-name")).to_have_value("Running low")


def test_a_bad_rule_is_shown_with_its_field(page: Page, live_server: str) -> None:
    page.set_viewport_size({"width": 768, "height": 900})
    log_in(page, live_server)
    page.goto("/alerts/new")
    page.fill("#rule-name", "Broken")
    page.click("#rule-filter-raw summary")
    page.fill("#rule-filter", "noSuchField eq 1")
    page.click("#save-rule")
    expect(page.locator("#rule-error")).to_contain_text("Not saved")
    expect(page.locator("#rule-filter-error")).to_be_visible()
    expect(page.locator("#rule-filter")).to_have_attribute("aria-invalid", "true")
    expect(page.locator(".chip-custom")).to_contain_text("noSuchField eq 1")
    assert_no_serious_violations(page)
    # A recipient beyond her reach (the ADMIN role) is refused, naming it.
    page.fill("#rule-filter", "amount le 5")
    page.fill("#rule-userRoles-search", "adm")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    page.click("#save-rule")
    expect(page.locator("#rule-error")).to_contain_text("may not address role 'ADMIN'")
    assert_no_serious_violations(page)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_example_rule_is_saved_with_enter(page: Page, live_server: str,
                                              width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, live_server)
    page.goto("/alerts")
    page.click("#example-rule")
    page.wait_for_load_state()  # htmx listens for the class change once the page has loaded
    expect(page.locator("#rule-name")).to_have_value("Expiring within 14 days")
    expect(page.locator(".filter-chips .chip-label")).to_have_text(
        ["Expiry date within the next 14 days"])
    expect(page.locator("#example-filter")).to_contain_text("expiryDate ge date(now())")
    # The class changed: the builder offers the fields of Request (and keeps the focus).
    page.select_option("#rule-eClass", "Request")
    expect(page.locator("#builder-field option[value='dueDate']")).to_have_count(1)
    page.select_option("#rule-eClass", "Sample")
    expect(page.locator("#builder-field option[value='expiryDate']")).to_have_count(1)
    _no_horizontal_scroll(page)
    assert_no_serious_violations(page)
    # A chip's × removes its condition (the form comes back, nothing saved yet).
    page.get_by_role("button", name="Remove condition: Expiry date within the next 14 days"
                     ).click()
    expect(page.locator(".filter-chips")).to_have_count(0)
    page.goto("/alerts/new?example=1")
    page.focus("#rule-name")
    page.keyboard.press("Enter")  # the form's default button saves
    expect(page.locator(".rule-row .rule-name")).to_have_text(["Expiring within 14 days"])
    expect(page.locator(".rule-filter")).to_contain_text("expiryDate ge date(now())")


@pytest.mark.parametrize("width", WIDTHS)
def test_an_owner_sees_the_failed_deliveries_of_their_rule(
        page: Page, live_app: Flask, live_server: str, width: int) -> None:
    log_in(page, live_server)
    page.goto("/alerts/new")
    page.fill("#rule-name", "Running low")
    page.click("#save-rule")
    rule_id = page.locator(".rule-row").get_attribute("id")[len("rule-"):]
    with live_app.app_context(), transaction():
        queue("carol@lab.example.org", "carol", "[labapp] Running low: 1 sample", "text",
              "<p>html</p>", utc_now(), rule_ids=[rule_id])
        queue("dan@lab.example.org", "dan", "[labapp] Someone else's rule", "text",
              "<p>html</p>", utc_now())
        db.session.execute(update(MailMessage).values(
            attempts=2, last_error="SMTPRecipientsRefused: {'carol@lab.example.org': (550, "
                                   "b'5.1.1 The e-mail account that you tried to reach does "
                                   "not exist')}"))
    page.set_viewport_size({"width": width, "height": 900})
    page.click(".rule-row .rule-name")
    rows = page.locator("#failed-list .outbox-row.failed")
    expect(rows).to_have_count(1)
    expect(rows.locator(".outbox-error")).to_contain_text("550")
    _no_horizontal_scroll(page)
    assert_no_serious_violations(page)
    page.click("#rule-outbox-link")
    expect(page.locator("#outbox-scope")).to_contain_text("your alert rules")
    expect(page.locator("#outbox-counts")).to_contain_text("1 failed")
    expect(page.locator("#outbox-list")).not_to_contain_text("Someone else")
    _no_horizontal_scroll(page)
    assert_no_serious_violations(page)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_outbox_shows_failures_to_the_admin(page: Page, live_app: Flask, live_server: str,
                                                width: int) -> None:
    with live_app.app_context(), transaction():
        queue("carol@lab.example.org", "carol", "[labapp] Running low: 1 sample", "text",
              "<p>html</p>", utc_now())
        db.session.execute(update(MailMessage).values(
            attempts=2, last_error="SMTPDataError: (451, b'Requested action aborted: try "
                                   "again later, the mail server is busy right now')"))
    page.set_viewport_size({"width": width, "height": 900})
    page.goto("/login")
    page.fill("#username", "admin")
    page.fill("#password", ADMIN_PASSWORD)
    page.click("#login-form button[type=submit]")
    page.wait_for_url(f"{live_server}/")
    page.goto("/alerts")
    page.click("#outbox-link")
    expect(page.locator("#outbox-counts")).to_contain_text("1 failed")
    expect(page.locator(".outbox-row.failed .outbox-error")).to_contain_text("451")
    _no_horizontal_scroll(page)
    assert_no_serious_violations(page)
