"""Webhook pages in real headless Chromium (issue 36 §3), at 1366 and 768 px: carol reaches
Webhooks from Alerts, makes a webhook with the form (URL, a class and a kind ticked), sees its
secret once (not again when she reloads the page), sends a ping, watches the delivery log fill
as the worker's lane delivers (the ping and a change), redelivers with the keyboard, and makes
a new secret, which signs beside the old one for a while; a private address is refused at its
field.
The pages pass axe-core and never scroll sideways; every delivery checks with the secret
shown (``standardwebhooks``)."""
from __future__ import annotations

from collections.abc import Callable

import pytest
from flask import Flask
from playwright.sync_api import Page, expect
from standardwebhooks.webhooks import Webhook

from labapp.setting_values import parse_networks
from labapp.webhooks import delivery
from tests.browser.axe import assert_no_serious_violations
from tests.browser.conftest import BROWSER_MARKS, create_entities, log_in
from tests.webhooks.conftest import Receiver, serve_receivers  # noqa: F401

pytestmark = BROWSER_MARKS

WIDTHS = (1366, 768)


def _no_horizontal_scroll(page: Page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth <= "
                         "document.documentElement.clientWidth")


def _deliver(app: Flask) -> None:
    """The worker's webhooks lane, until it finds no work."""
    with app.app_context():
        while delivery.upkeep():
            pass


@pytest.mark.parametrize("width", WIDTHS)
def test_make_ping_watch_and_redeliver(page: Page, live_app: Flask, live_server: str,
                                       serve_receivers: Callable[..., Receiver],  # noqa: F811
                                       width: int) -> None:
    live_app.config["LABAPP"]["WEBHOOK_ALLOWED_NETWORKS"] = parse_networks("127.0.0.0/8")
    receiver = serve_receivers()
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, live_server)
    page.click("#alerts-link")
    page.click("#webhooks-link")
    expect(page.locator("h1")).to_have_text("Webhooks")
    expect(page.locator("#no-webhooks")).to_be_visible()
    assert_no_serious_violations(page)
    _no_horizontal_scroll(page)

    page.click("#new-webhook")
    page.fill("#webhook-name", "Instrument")
    page.fill("#webhook-url", "http://10.0.0.7/hook")
    page.check("#webhook-classes input[value=Sample]")
    page.click("#save-webhook")
    expect(page.locator("#webhook-error")).to_be_visible()
    expect(page.locator("#webhook-url")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#webhook-url-error")).to_contain_text("private address")
    expect(page.locator("#webhook-classes input[value=Sample]")).to_be_checked()
    assert_no_serious_violations(page)

    page.fill("#webhook-url", receiver.url)
    page.check("#webhook-kinds input[value=create]")
    page.click("#save-webhook")
    secret = page.locator("#secret-value").inner_text()
    assert secret.startswith("whsec_")
    expect(page.locator("#no-deliveries")).to_be_visible()
    assert_no_serious_violations(page)
    _no_horizontal_scroll(page)
    page.reload()  # the page the form led to: reloading it makes no second webhook
    expect(page.locator("#secret-value")).to_have_count(0)
    expect(page.locator("#no-deliveries")).to_be_visible()

    page.click("#ping-webhook")
    expect(page.locator("#ping-queued")).to_be_visible()
    expect(page.locator("#secret-value")).to_have_count(0)  # shown once only
    create_entities(live_server, {"eClass": "Sample", "name": "Fresh tube"})
    _deliver(live_app)
    page.reload()
    rows = page.locator(".delivery-row")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("entity.create")
    expect(rows.nth(1)).to_contain_text("webhook.ping")
    expect(page.locator(".delivery-status").first).to_contain_text("succeeded")
    assert_no_serious_violations(page)
    _no_horizontal_scroll(page)

    rows.nth(1).locator("button.redeliver").focus()
    with page.expect_navigation():
        page.keyboard.press("Enter")
    _deliver(live_app)
    page.reload()
    expect(page.locator(".delivery-row")).to_have_count(3)
    got = [Webhook(secret).verify(request.body, request.headers)
           for request in receiver.requests]
    assert [message["type"] for message in got] == [
        "webhook.ping", "entity.create", "webhook.ping"]
    assert got[1]["data"]["entity"]["name"] == "Fresh tube"

    page.click("#rotate-secret")
    rotated = page.locator("#secret-value").inner_text()
    assert rotated.startswith("whsec_") and rotated != secret
    expect(page.locator("#previous-secret")).to_contain_text("signs beside the new one")
    assert_no_serious_violations(page)
    _no_horizontal_scroll(page)
    page.click("#ping-webhook")
    _deliver(live_app)
    last = receiver.requests[-1]
    for either in (secret, rotated):  # the receiver may hold the old secret or the new
        assert Webhook(either).verify(last.body, last.headers)["type"] == "webhook.ping"

    page.click("nav.breadcrumbs a")
    expect(page.locator(".webhook-row")).to_have_count(1)
    expect(page.locator(".webhook-state")).to_have_text("active")
    _no_horizontal_scroll(page)
