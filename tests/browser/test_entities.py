"""The entity browser in real headless Chromium: the issue's scenario end to end (create a
Sample with attributes, find it with a filter, edit it, see the change in the audit trail,
attach a file and download it) and paging without reloading the page."""
from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.request import Request, urlopen

from playwright.sync_api import Page, expect

from tests.browser.conftest import BROWSER_MARKS, USERNAME, log_in
from tests.conftest import PASSWORD, basic_header

pytestmark = BROWSER_MARKS

CSV = b"time,od600\n0,0.05\n60,0.31\n120,0.87\n"


def create_samples(base_url: str, names: list[str]) -> None:
    """Create Samples through ``POST /api/entity`` on the live server as carol."""
    body = json.dumps({"entities": [{"eClass": "Sample", "name": name} for name in names]})
    request = Request(f"{base_url}/api/entity", data=body.encode(), method="POST",
                      headers={"Content-Type": "application/json",
                               **basic_header(USERNAME, PASSWORD)})
    with urlopen(request, timeout=10) as response:
        assert response.status == 201


def test_create_find_edit_audit_attach_and_download(page: Page, live_server: str,
                                                    tmp_path: Path) -> None:
    log_in(page, live_server)
    page.get_by_role("link", name="Entities", exact=True).click()
    page.get_by_role("link", name="Sample", exact=True).click()
    page.click("#new-entity")
    page.wait_for_url(f"{live_server}/entities/Sample/new")

    # Create a Sample with two attributes; the second row is added in place by app.js.
    page.fill("#field-name", "Overnight culture")
    page.fill("#field-amount", "25")
    keys, values = page.locator("input[name=attr_key]"), page.locator("input[name=attr_value]")
    keys.nth(0).fill("strain")
    values.nth(0).fill("BL21")
    page.click("#add-attribute")
    expect(keys).to_have_count(2)
    assert page.url == f"{live_server}/entities/Sample/new", "no round trip for a row"
    keys.nth(1).fill("ph")
    values.nth(1).fill("7.1")
    page.click("#save-entity")
    page.wait_for_url(re.compile(r"/entities/Sample/SAM\d+$"))
    sample_id = page.url.rsplit("/", 1)[1]
    expect(page.locator(".flash-success")).to_have_text(f"Sample {sample_id} created.")
    expect(page.locator("#attribute-table td")).to_have_text(["ph", "7.1", "strain", "BL21"])

    # Find it with a filter: a mistake is shown next to the box, then the right filter.
    create_samples(live_server, ["Other culture"])
    page.goto("/entities/Sample")
    expect(page.locator("#entity-table tbody tr")).to_have_count(2)
    page.click("#filter-raw summary")  # the $filter box, under the filter builder
    page.fill("#filter", "attributes.strain eq")
    page.click("#table-query button[type=submit]")
    expect(page.locator("#filter-error")).to_contain_text("at position")
    expect(page.locator("#htmx-error")).to_have_count(0)
    page.fill("#filter", "attributes.strain eq 'BL21' and attributes.ph gt 7")
    page.click("#table-query button[type=submit]")
    expect(page.locator("#filter-error")).to_have_count(0)
    rows = page.locator("#entity-table tbody tr")
    expect(rows).to_have_count(1)
    expect(rows).to_contain_text("Overnight culture")
    assert "filter=attributes.strain" in page.url, "the filter is in the address"

    # Edit it and see the change in the audit trail.
    rows.get_by_role("link", name=sample_id).click()
    page.wait_for_url(f"{live_server}/entities/Sample/{sample_id}")
    page.click("#edit-entity")
    page.fill("#field-name", "Overnight culture, induced")
    page.select_option("#field-status", "InProgress")
    page.click("#save-entity")
    page.wait_for_url(f"{live_server}/entities/Sample/{sample_id}")
    expect(page.locator(".flash-success")).to_have_text(f"Sample {sample_id} saved.")
    expect(page.locator("#entity-status")).to_have_text("In progress")
    change = page.locator("#audit-table tbody tr", has=page.locator("td", has_text="Name"))
    expect(change.first).to_contain_text("Overnight culture → Overnight culture, induced")
    expect(page.locator("#audit-table tbody tr").first).to_contain_text(USERNAME)

    # A note is added in place by htmx.
    page.fill("#note-content", "Induced with IPTG at OD 0.6")
    page.click("#note-form button[type=submit]")
    expect(page.locator("#notes .note-content")).to_have_text("Induced with IPTG at OD 0.6")
    assert page.url == f"{live_server}/entities/Sample/{sample_id}"

    # Attach a file and download it.
    page.set_input_files("#file-input", files=[
        {"name": "growth.csv", "mimeType": "text/csv", "buffer": CSV}])
    page.click("#file-form button[type=submit]")
    page.wait_for_url(f"{live_server}/entities/Sample/{sample_id}#files")
    expect(page.locator(".flash-success")).to_have_text("File “growth.csv” uploaded.")
    link = page.locator("#file-table").get_by_role("link", name="growth.csv")
    with page.expect_download() as info:
        link.click()
    download = info.value
    assert download.suggested_filename == "growth.csv"
    target = tmp_path / "growth.csv"
    download.save_as(target)
    assert target.read_bytes() == CSV


def test_paging_swaps_the_table_without_reloading(page: Page, live_server: str) -> None:
    create_samples(live_server, [f"Plate sample {number:03d}" for number in range(75)])
    log_in(page, live_server)
    page.goto("/entities/Sample?orderby=name")
    rows = page.locator("#entity-table tbody tr")
    expect(rows).to_have_count(50)
    page.evaluate("window.sameDocument = true")

    page.click("#next-page")
    expect(page.locator("#table-summary")).to_have_text("Showing 51–75 of 75")
    expect(rows).to_have_count(25)
    expect(rows.first).to_contain_text("Plate sample 050")
    assert "/entities/Sample?orderby=name&skip=50&skiptoken=" in page.url  # keyset (issue 24)
    assert page.evaluate("window.sameDocument") is True, "htmx swapped the table in place"

    page.get_by_role("link", name="Name ▲").click()
    expect(rows.first).to_contain_text("Plate sample 074")
    expect(page.locator("#table-summary")).to_have_text("Showing 1–50 of 75")
    assert page.evaluate("window.sameDocument") is True

    # A filtered table shows its rows first and its count when the count arrives (issue 24).
    page.click("#filter-raw summary")
    page.fill("#filter", "startswith(name,'Plate sample 0')")
    page.click("#apply-filter")
    expect(page.locator("#table-summary")).to_have_text("Showing 1–50 of 75")
    expect(page.locator("#table-total")).not_to_have_attribute("hx-get", re.compile("."))
    expect(rows).to_have_count(50)
    # The same on a page loaded whole; the count's request leaves the table and the address.
    filtered = "/entities/Sample?filter=startswith(name,'Plate sample 0')&orderby=name"
    page.goto(filtered)
    expect(page.locator("#table-summary")).to_have_text("Showing 1–50 of 75")
    expect(rows).to_have_count(50)
    assert "/entities/count/" not in page.url
