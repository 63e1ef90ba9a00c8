"""The second factor in real headless Chromium (issue 35 §4), at 1366 and 768 px: carol sets
it up on her profile page (the QR code decodes to the ``otpauth://`` URI of the secret the page
shows; the code is made from that secret with pyotp), sees her recovery codes once, logs out,
and logs in again through the second step. The pages pass axe-core, never scroll sideways and
break no Content-Security-Policy rule (the ``page`` fixture)."""
from __future__ import annotations

import io

import pyotp
import pytest
import zxingcpp
from PIL import Image
from playwright.sync_api import Page, expect

from labapp.model.types import utc_now
from tests.browser.axe import assert_no_serious_violations
from tests.browser.conftest import BROWSER_MARKS, USERNAME, log_in
from tests.conftest import PASSWORD

pytestmark = BROWSER_MARKS

WIDTHS = (1366, 768)


def _no_horizontal_scroll(page: Page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth <= "
                         "document.documentElement.clientWidth")


def _code(secret: str, steps_ahead: int = 0) -> str:
    totp = pyotp.TOTP(secret)
    return totp.generate_otp(totp.timecode(utc_now()) + steps_ahead)


@pytest.mark.parametrize("width", WIDTHS)
def test_set_up_and_log_in_with_a_second_factor(page: Page, live_server: str,
                                                width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, live_server)
    page.goto("/profile")
    expect(page.locator("#second-factor-status")).to_contain_text("Off.")
    page.focus("#second-factor-begin button")
    page.keyboard.press("Enter")
    secret = page.locator("#second-factor-secret").inner_text().replace(" ", "")
    qr = page.locator("#second-factor-qr svg")
    expect(qr).to_be_visible()
    decoded = zxingcpp.read_barcodes(Image.open(io.BytesIO(qr.screenshot())))
    assert [(found.format.name, pyotp.parse_uri(found.text).secret) for found in decoded] \
        == [("QRCode", secret)]
    _no_horizontal_scroll(page)
    assert_no_serious_violations(page)

    page.fill("#confirm-code", _code(secret))
    page.press("#confirm-code", "Enter")
    codes = page.locator("#recovery-codes li code")
    expect(codes).to_have_count(10)
    expect(page.locator("#second-factor-status")).to_contain_text("On since")
    _no_horizontal_scroll(page)

    page.click("#logout-button")
    page.wait_for_url(f"{live_server}/login")
    page.fill("#username", USERNAME)
    page.fill("#password", PASSWORD)
    page.click("#login-form button[type=submit]")
    page.wait_for_url(f"{live_server}/login/code*")
    expect(page.locator("#code")).to_be_focused()
    _no_horizontal_scroll(page)
    assert_no_serious_violations(page)
    # The confirming code's step is used up: the next step's code is the one to give.
    page.fill("#code", _code(secret, 1))
    page.press("#code", "Enter")
    page.wait_for_url(f"{live_server}/")
    page.goto("/profile")
    expect(page.locator("#second-factor-status")).to_contain_text("On since")
