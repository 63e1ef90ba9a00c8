"""Finding one's way in real headless Chromium: a Sample is hung under a Step picked from the
suggestions of its reference input, the Step's tree unfolds in place, and a status button
moves the Sample on (with its StatusChanged event)."""
from __future__ import annotations

import json
import re
from typing import Any
from urllib.request import Request, urlopen

from playwright.sync_api import Page, expect

from tests.browser.conftest import BROWSER_MARKS, USERNAME, log_in
from tests.conftest import PASSWORD, basic_header

pytestmark = BROWSER_MARKS


def create(base_url: str, *items: dict[str, Any]) -> list[dict[str, Any]]:
    """Create entities through ``POST /api/entity`` on the live server as carol."""
    body = json.dumps({"entities": list(items)})
    request = Request(f"{base_url}/api/entity", data=body.encode(), method="POST",
                      headers={"Content-Type": "application/json",
                               **basic_header(USERNAME, PASSWORD)})
    with urlopen(request, timeout=10) as response:
        assert response.status == 201
        return json.load(response)["entities"]


def test_pick_a_step_by_suggestion_and_move_the_status(page: Page, live_server: str) -> None:
    experiment, step, _, _ = create(
        live_server,
        {"eClass": "Experiment", "id": "#exp", "name": "Growth curve"},
        {"eClass": "Step", "id": "#step", "name": "Mixing buffer", "experimentID": "#exp"},
        {"eClass": "Step", "name": "Harvest", "experimentID": "#exp"},
        {"eClass": "Sample", "name": "Stock buffer"})
    log_in(page, live_server)
    page.goto("/entities/Sample/new")

    # The name is checked as it is typed: another sample's name is taken, a new one is free.
    page.locator("#field-name").press_sequentially("Stock buffer")
    expect(page.locator("#field-name-unique")).to_have_text("already used")
    page.fill("#field-name", "Buffered culture")
    expect(page.locator("#field-name-unique")).to_have_text("✓ available")

    # Type part of the step's name, pick it from the suggestions.
    page.locator("#field-stepID").press_sequentially("buff")
    choice = page.locator("#field-stepID-suggest button")
    expect(choice).to_have_text([f"{step['id']} — Mixing buffer"])
    choice.click()
    expect(page.locator("#field-stepID")).to_have_value(step["id"])
    expect(page.locator("#field-stepID-suggest li")).to_have_count(0)
    page.click("#save-entity")
    page.wait_for_url(re.compile(r"/entities/Sample/SAM\d+$"))
    sample_id = page.url.rsplit("/", 1)[1]
    expect(page.locator("#ancestors a")).to_have_text(["Growth curve", "Mixing buffer"])

    # The experiment's tree unfolds the step in place, and folds it again.
    page.locator("#ancestors a", has_text="Growth curve").click()
    page.wait_for_url(f"{live_server}/entities/Experiment/{experiment['id']}")
    page.evaluate("window.sameDocument = true")
    row = page.locator("#hierarchy .tree-item", has_text="Mixing buffer")
    row.locator(".tree-toggle").click()
    nested = row.locator(".subtree .tree-item")
    expect(nested).to_have_text(re.compile("Buffered culture"))
    expect(row.locator(".tree-toggle")).to_have_attribute("aria-expanded", "true")
    row.locator(".tree-toggle").click()
    expect(nested).to_be_hidden()
    assert page.evaluate("window.sameDocument") is True, "the tree unfolded without leaving"

    # Move the sample on by the status buttons: only allowed transitions are offered.
    page.goto(f"/entities/Sample/{sample_id}")
    expect(page.locator("#entity-status")).to_have_text("Initial")
    expect(page.locator("#status-form button")).to_have_text(
        ["In progress", "Canceled", "Discarded"])
    page.click("#status-to-InProgress")
    page.wait_for_url(f"{live_server}/entities/Sample/{sample_id}")
    expect(page.locator(".flash-success")).to_have_text(f"Sample {sample_id} is now In progress.")
    expect(page.locator("#entity-status")).to_have_text("In progress")
    expect(page.locator("#events li", has_text="Status changed")).to_contain_text(
        "from Initial to In progress")
    expect(page.locator("#status-form button")).to_have_text(
        ["Completed", "Canceled", "Initial", "Discarded"])


def test_children_pages_swap_in_place(page: Page, live_server: str) -> None:
    (rack,) = create(live_server, {"eClass": "Sample", "id": "#rack", "name": "Rack"})
    create(live_server, *({"eClass": "Sample", "name": f"Tube {number:02d}",
                           "parentID": rack["id"]} for number in range(55)))
    log_in(page, live_server)
    page.goto(f"/entities/Sample/{rack['id']}")
    rows = page.locator("#hierarchy .tree > .tree-item")
    expect(rows).to_have_count(50)
    page.evaluate("window.sameDocument = true")

    page.locator("#hierarchy a[rel=next]").click()
    expect(rows).to_have_count(5)
    expect(rows.first).to_contain_text("Tube 50")
    expect(page.locator("#hierarchy .tree-pager")).to_contain_text("51–55 of 55")
    assert page.url.endswith(f"/entities/Sample/{rack['id']}?skip=50#hierarchy")
    page.locator("#hierarchy a[rel=prev]").click()
    expect(rows.first).to_contain_text("Tube 00")
    assert page.evaluate("window.sameDocument") is True, "htmx swapped the page of children"
