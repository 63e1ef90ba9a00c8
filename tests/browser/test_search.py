"""The search box in real headless Chromium (issue 10): "/" focuses it, results come as
the visitor types with the matched words marked, the keyboard walks them (the combobox
pattern, issue 21 §5), a scanned barcode (the code and Enter) opens its entity, and a user
finds nothing they may not see."""
from __future__ import annotations

import re

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page, expect

from tests.browser.axe import SERIOUS
from tests.browser.conftest import BROWSER_MARKS, create_entities, log_in
from tests.conftest import ADMIN_PASSWORD

pytestmark = BROWSER_MARKS


def test_type_ahead_marks_the_matched_words(page: Page, live_server: str) -> None:
    (sample,) = create_entities(live_server, {"eClass": "Sample", "name": "Zebrafish embryo",
                                              "barcode": "ZF-0042"})
    log_in(page, live_server)
    page.keyboard.press("/")
    expect(page.locator("#search-box")).to_be_focused()
    page.keyboard.type("zebra*")
    option = page.locator("#search-suggest a", has_text="Zebrafish")
    expect(option).to_have_attribute("data-id", sample["id"])
    expect(option.locator("mark")).to_have_text("Zebrafish")


@pytest.mark.parametrize("width", [1366, 768])
def test_the_keyboard_walks_opens_and_closes_the_type_ahead(
        page: Page, live_server: str, width: int) -> None:
    """Focus stays in the box: the arrows move the active suggestion (aria-activedescendant,
    wrapping), Esc closes the list without clearing the term, Enter opens the active one."""
    first, second = create_entities(live_server,
                                    {"eClass": "Sample", "name": "Keyboard culture A"},
                                    {"eClass": "Sample", "name": "Keyboard culture B"})
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, live_server)
    box = page.locator("#search-box")
    box.focus()
    page.keyboard.type("Keyboard culture")
    options = page.locator("#search-suggest a[role=option]")
    expect(options).to_have_count(2)
    expect(box).to_have_attribute("aria-expanded", "true")
    expect(options.nth(0)).to_have_attribute("data-id", first["id"])

    def active(index: int) -> None:
        expect(options.nth(index)).to_have_attribute("aria-selected", "true")
        expect(options.nth(1 - index)).to_have_attribute("aria-selected", "false")
        expect(box).to_have_attribute("aria-activedescendant",
                                      options.nth(index).get_attribute("id") or "")
        expect(box).to_be_focused()

    page.keyboard.press("ArrowDown")
    active(0)
    violations = Axe().run(page, context=".topbar-search").response["violations"]
    assert [rule["id"] for rule in violations if rule["impact"] in SERIOUS] == []
    page.keyboard.press("ArrowDown")
    active(1)
    page.keyboard.press("ArrowDown")  # past the last: back to the first
    active(0)
    page.keyboard.press("ArrowUp")
    active(1)
    page.keyboard.press("Escape")
    expect(page.locator("#search-suggest [role=listbox]")).to_have_count(0)
    expect(box).to_have_attribute("aria-expanded", "false")
    expect(box).not_to_have_attribute("aria-activedescendant", re.compile(".*"))
    expect(box).to_have_value("Keyboard culture")
    expect(box).to_be_focused()
    page.keyboard.press("Backspace")  # a changed term asks again
    expect(options).to_have_count(2)
    page.keyboard.press("ArrowUp")  # from none: the last
    active(1)
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(rf"/entities/Sample/{second['id']}$"))
    expect(page.locator("h1")).to_contain_text("Keyboard culture B")


def test_the_results_page_groups_and_marks(page: Page, live_server: str) -> None:
    create_entities(live_server, {"eClass": "Sample", "name": "Lysate of K-12"},
                    {"eClass": "Experiment", "name": "K-12 growth"})
    log_in(page, live_server)
    page.goto("/search?q=K-12")
    expect(page.locator(".search-group[data-class=Sample] mark")).to_have_text("K-12")
    expect(page.locator(".search-group[data-class=Experiment] .search-hit")).to_have_count(1)
    page.select_option("#search-class", "Experiment")  # htmx swaps the results in place
    expect(page.locator(".search-group[data-class=Sample]")).to_have_count(0)
    expect(page.locator(".search-group[data-class=Experiment] mark")).to_have_text("K-12")


def test_a_scanned_barcode_opens_its_entity(page: Page, live_server: str) -> None:
    (sample,) = create_entities(live_server, {"eClass": "Sample", "name": "Frozen stock",
                                              "barcode": "4006381333931"})
    log_in(page, live_server)
    page.locator("#search-box").focus()
    page.keyboard.type("4006381333931\n")  # what a USB scanner sends
    page.wait_for_url(re.compile(rf"/entities/Sample/{sample['id']}$"))
    expect(page.locator("h1")).to_contain_text("Frozen stock")


def test_a_user_does_not_find_what_they_may_not_see(page: Page, live_server: str) -> None:
    (other,) = create_entities(live_server, {"eClass": "Department", "name": "Secret lab"},
                               username="admin", password=ADMIN_PASSWORD)
    create_entities(live_server, {"eClass": "Sample", "name": "Classified culture",
                                  "barcode": "SECRET-1", "departmentID": other["id"]},
                    username="admin", password=ADMIN_PASSWORD)
    log_in(page, live_server)
    page.locator("#search-box").focus()
    page.keyboard.type("Classified")
    expect(page.locator("#search-suggest .search-none")).to_have_text("Nothing found.")
    page.locator("#search-box").fill("SECRET-1")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/search\?"))
    expect(page.locator(".search-none")).to_have_text("Nothing found.")
