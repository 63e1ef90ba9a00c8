"""Entity lists and an experiment's page a lab member reads (issue 21 §2), in real headless
Chromium on a laptop and a tablet: a Sample list's default columns (amount with its unit, where
it is stored), expired, empty and low values marked in words, a Request overdue; an
experiment's steps in step order with their sample counts, paged; no page wider than the
window, and axe-core clean."""
from __future__ import annotations

import json
from typing import Any
from urllib.request import Request, urlopen

import pytest
from playwright.sync_api import Page, expect

from tests.browser.axe import assert_no_serious_violations
from tests.browser.conftest import BROWSER_MARKS, USERNAME, create_entities, log_in
from tests.conftest import PASSWORD, basic_header
from tests.helpers.dates import days_from_today

pytestmark = BROWSER_MARKS



def post_json(base_url: str, path: str, body: Any) -> Any:
    """``POST`` a JSON body to the live server as carol; the JSON answer."""
    request = Request(f"{base_url}{path}", data=json.dumps(body).encode(), method="POST",
                      headers={"Content-Type": "application/json",
                               **basic_header(USERNAME, PASSWORD)})
    with urlopen(request, timeout=10) as response:
        assert response.status in (200, 201)
        return json.load(response)


def no_horizontal_scroll(page: Page) -> None:
    assert page.evaluate(
        "document.documentElement.scrollWidth <= document.documentElement.clientWidth")


def headers(page: Page) -> list[str]:
    return [text.strip().rstrip(" ▲▼").strip()
            for text in page.locator("#entity-table thead th").all_text_contents()]


@pytest.mark.parametrize("width", [1366, 768])
def test_sample_and_request_lists_show_columns_and_marks(page: Page, live_server: str,
                                                         width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    *_, box = post_json(live_server, "/api/storage/location", [
        {"id": "#lab", "name": "Lab 2"},
        {"id": "#freezer", "name": "Freezer -80", "parentID": "#lab"},
        {"name": "Box 12", "parentID": "#freezer", "rows": 8, "columns": 12}])
    stored, *_ = create_entities(
        live_server,
        {"eClass": "Sample", "name": "Lysate 7", "barcode": "LY-7", "amount": 180,
         "unit": "µL", "expiryDate": days_from_today(365)},
        {"eClass": "Sample", "name": "Old serum", "amount": 2, "unit": "mL",
         "expiryDate": days_from_today(-1)},
        {"eClass": "Sample", "name": "Dry tube", "amount": 0, "unit": "mL"},
        {"eClass": "Sample", "name": "Last drops", "amount": 4, "unit": "µL"},
        {"eClass": "Request", "name": "Thaw plates", "assigneeID": USERNAME,
         "dueDate": days_from_today(-1), "priority": "Urgent"})
    post_json(live_server, f"/api/storage/location/{box['id']}/checkin",
              [{"eClass": "Sample", "id": stored["id"], "position": "B7"}])
    log_in(page, live_server)

    page.goto("/entities/Sample?orderby=name")
    assert headers(page) == ["ID", "Name", "Barcode", "Status", "Amount", "Location",
                             "Expiry date"]
    rows = page.locator("#entity-table tbody tr")
    lysate = rows.filter(has_text="Lysate 7")
    expect(lysate.locator("td").nth(4)).to_have_text("180 µL")
    expect(lysate.locator("td").nth(5)).to_contain_text("Freezer -80 / Box 12 · B7")
    expect(lysate.locator("td").nth(5).locator("a")).to_have_attribute(
        "title", "Lab 2 / Freezer -80 / Box 12 · B7")
    expect(lysate.locator(".mark")).to_have_count(0)
    for name, word in (("Old serum", "expired"), ("Dry tube", "empty"),
                       ("Last drops", "low")):
        mark = rows.filter(has_text=name).locator(".mark")
        expect(mark).to_have_text(word)
        expect(mark).to_be_visible()
    no_horizontal_scroll(page)
    assert_no_serious_violations(page)

    page.goto("/entities/Request")
    assert headers(page) == ["ID", "Name", "Assignee", "Status", "Due date", "Priority"]
    request = page.locator("#entity-table tbody tr").filter(has_text="Thaw plates")
    expect(request.locator("td").nth(2)).to_contain_text("Carol Chemist")
    expect(request.locator(".mark")).to_have_text("overdue")
    no_horizontal_scroll(page)
    assert_no_serious_violations(page)


@pytest.mark.parametrize("width", [1366, 768])
def test_experiment_lists_steps_in_order_with_counts(page: Page, live_server: str,
                                                     width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    experiment, *steps = create_entities(
        live_server, {"eClass": "Experiment", "id": "#exp", "name": "Cold chain"},
        *({"eClass": "Step", "name": f"Step {index:02d}", "stepIndex": index,
           "experimentID": "#exp"} for index in range(54, 0, -1)))
    by_index = {step["stepIndex"]: step["id"] for step in steps}
    create_entities(live_server, *({"eClass": "Sample", "name": f"Tube {number}",
                                    "stepID": by_index[1]} for number in range(3)))
    log_in(page, live_server)
    page.goto(f"/entities/Experiment/{experiment['id']}")
    rows = page.locator("#hierarchy .tree > .tree-item")
    expect(rows).to_have_count(50)
    expect(rows.first).to_contain_text("Step 01")
    expect(rows.first.locator(".child-samples")).to_have_text("3 samples")
    expect(rows.nth(1).locator(".child-samples")).to_have_text("0 samples")
    no_horizontal_scroll(page)
    assert_no_serious_violations(page)

    page.evaluate("window.sameDocument = true")
    page.locator("#hierarchy a[rel=next]").click()
    expect(rows).to_have_count(4)
    expect(rows.first).to_contain_text("Step 51")
    assert page.evaluate("window.sameDocument") is True, "swapped in place by htmx"
    assert page.url.endswith("?skip=50#hierarchy")
    no_horizontal_scroll(page)
