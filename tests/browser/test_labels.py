"""Labels in real headless Chromium (issue 19), on a wide and a narrow window: tubes with
long, similar names get labels that tell them apart, the code's text is printed under the
bars with the date and the owner's initials, a scanned barcode is accepted, and the roll
format prints each label on a 50 × 25 mm page of its own — all under the strict CSP and
without a horizontal scroll bar."""
from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import BROWSER_MARKS, create_entities, log_in

pytestmark = BROWSER_MARKS

WIDTHS = [1366, 768]
CLONE_7 = "pLentiCRISPRv2-sgRNA-BRCA1-clone7"
CLONE_8 = "pLentiCRISPRv2-sgRNA-BRCA1-clone8"
PT_PER_MM = 72 / 25.4


def open_at(page: Page, base_url: str, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, base_url)


def no_horizontal_scroll(page: Page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth"
                         " <= document.documentElement.clientWidth")


def pdf_pages_mm(page: Page) -> list[tuple[float, float]]:
    """The size of each page Chromium prints, in millimetres (from the PDF's MediaBoxes)."""
    pdf = page.pdf(prefer_css_page_size=True)
    boxes = re.findall(rb"/MediaBox\s*\[\s*0 0 ([\d.]+) ([\d.]+)\s*\]", pdf)
    return [(round(float(w) / PT_PER_MM), round(float(h) / PT_PER_MM)) for w, h in boxes]


@pytest.mark.parametrize("width", WIDTHS)
def test_similar_long_names_get_labels_that_tell_them_apart(page: Page, live_server: str,
                                                            width: int) -> None:
    seven, eight = create_entities(live_server,
                                   {"eClass": "Sample", "name": CLONE_7, "barcode": "MB0240007"},
                                   {"eClass": "Sample", "name": CLONE_8})
    open_at(page, live_server, width)
    page.goto(f"/storage/labels?ids={seven['id']}+{eight['id']}")
    names = page.locator(".label-name")
    expect(names).to_have_text(["pLentiCR…A1-clone7", "pLentiCR…A1-clone8"])
    # The shortened names fit their line: nothing is cut off at the end by the browser.
    assert names.evaluate_all("all => all.every(e => e.scrollWidth <= e.clientWidth)")
    today = datetime.now(UTC).date().isoformat()
    for entity, code in ((seven, "MB0240007"), (eight, eight["id"])):
        label = page.locator(f'[data-label="{entity["id"]}"]')
        expect(label.locator("svg")).to_have_count(2)
        bars = label.locator(".label-barcode svg").bounding_box()
        text = label.locator(".label-code")
        expect(text).to_be_visible()
        expect(text).to_have_text(code)
        under = text.bounding_box()
        assert bars["y"] + bars["height"] - 1 <= under["y"] <= bars["y"] + bars["height"] + 4
        assert abs((under["x"] + under["width"] / 2) - (bars["x"] + bars["width"] / 2)) < 2
        meta = label.locator(".label-meta").bounding_box()
        for part, expected in ((".label-date", today), (".label-owner", "CC")):
            expect(label.locator(part)).to_have_text(expected)
            box = label.locator(part).bounding_box()
            assert box["y"] + box["height"] <= meta["y"] + meta["height"] + 0.5, part
    assert no_horizontal_scroll(page)
    assert pdf_pages_mm(page) == [(210, 297)]


@pytest.mark.parametrize("width", WIDTHS)
def test_a_scanned_barcode_prints_on_the_roll(page: Page, live_server: str,
                                              width: int) -> None:
    tube, plate = create_entities(live_server,
                                  {"eClass": "Sample", "name": CLONE_7, "barcode": "MB0240002"},
                                  {"eClass": "Plate", "name": "Plate 1"})
    open_at(page, live_server, width)
    page.goto("/storage/labels")
    page.fill("#label-ids", f"MB0240002\n{plate['id']}\n")
    page.select_option("#label-format", "roll")
    page.click("#labels-form button[type=submit]")
    page.wait_for_url(re.compile(r"format=roll"))
    expect(page.locator("#labels-skipped")).to_have_count(0)
    expect(page.locator(".label")).to_have_count(2)
    label = page.locator(f'[data-label="{tube["id"]}"]')
    expect(label.locator(".label-code")).to_have_text("MB0240002")
    expect(label.locator(".label-qr")).to_have_count(0)
    expect(page.locator("#label-format")).to_have_value("roll")
    box = label.bounding_box()
    assert (round(box["width"] * 25.4 / 96), round(box["height"] * 25.4 / 96)) == (50, 25)
    assert no_horizontal_scroll(page)
    assert pdf_pages_mm(page) == [(50, 25), (50, 25)]


@pytest.mark.parametrize("width", WIDTHS)
def test_an_unknown_format_says_which_formats_exist(page: Page, live_server: str,
                                                    width: int) -> None:
    open_at(page, live_server, width)
    response = page.goto("/storage/labels?format=a5&ids=X")
    assert response is not None and response.status == 400
    expect(page.locator(".problem-detail")).to_have_text(
        "Unknown label format 'a5': choose 'sheet' or 'roll'.")
    assert no_horizontal_scroll(page)
