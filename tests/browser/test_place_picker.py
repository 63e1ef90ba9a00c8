"""The place picker of the New sample form in real Chromium (issue 19 §1), at a desktop and
a tablet width: choosing a box loads its free slots, the chosen slot is where the tube goes,
and the form fits without horizontal scrolling."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import BROWSER_MARKS, create_entities, log_in

pytestmark = BROWSER_MARKS


@pytest.mark.parametrize("width", [1366, 768])
def test_choosing_a_box_offers_its_free_slots(page: Page, live_server: str,
                                              width: int) -> None:
    page.set_viewport_size({"width": width, "height": 1000})
    box, = create_entities(live_server, {"eClass": "Location", "name": "Box 12", "rows": 2,
                                         "columns": 2})
    create_entities(live_server, {"eClass": "Sample", "name": "Holder",
                                  "locationID": box["id"], "position": "A1"})
    log_in(page, live_server)
    page.goto("/entities/Sample/new")
    expect(page.locator("#field-position option")).to_have_count(1)
    page.select_option("#field-locationID", box["id"])
    expect(page.locator("#field-position option")).to_have_count(4)
    assert page.locator("#field-position option").all_inner_texts() == [
        "First free slot", "A2", "B1", "B2"]
    page.select_option("#field-position", "B1")
    page.fill("#field-name", "Tube from the form")
    page.click("#save-entity")
    expect(page.locator(".flash-success")).to_contain_text("created")
    assert page.evaluate("document.documentElement.scrollWidth <= "
                         "document.documentElement.clientWidth")
    page.goto(f"/storage/locations/{box['id']}")
    expect(page.locator('[data-slot="B1"]')).to_have_class(re.compile(r"\bslot-taken\b"))
    expect(page.locator('[data-slot="B1"] a')).to_have_accessible_name(
        re.compile("Tube from the form"))


def test_the_edit_form_asks_before_a_final_status(page: Page, live_server: str) -> None:
    """Issue 19 §3: setting a final status in the edit form asks first; a refusal keeps
    the entity as it was."""
    sample, = create_entities(live_server, {"eClass": "Sample", "name": "Old stock"})
    log_in(page, live_server)
    page.goto(f"/entities/Sample/{sample['id']}/edit")
    asked: list[str] = []

    def answer(dialog, accept: bool) -> None:
        asked.append(dialog.message)
        dialog.accept() if accept else dialog.dismiss()

    page.once("dialog", lambda dialog: answer(dialog, False))
    page.select_option("#field-status", "Discarded")
    page.click("#save-entity")
    assert asked == [f"Set the status of Sample {sample['id']} to Discarded? Discarded ends "
                     "its work."]
    expect(page).to_have_url(re.compile(r"/edit$"))
    page.once("dialog", lambda dialog: answer(dialog, True))
    page.click("#save-entity")
    expect(page.locator("#entity-status")).to_have_text("Discarded")
    assert len(asked) == 2
