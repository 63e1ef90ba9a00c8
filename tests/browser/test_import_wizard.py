"""The import wizard in real headless Chromium (issue 22), at 1366 and 768 px: from a list's
"Import…" through upload, mapping, the dry run's progress and row table (errors only, the
annotated CSV and XLSX read back), to the commit and the entities it wrote. Jobs are run by
a worker thread started once the page shows the job waiting for it (and that no worker
runs)."""
from __future__ import annotations

import csv
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from io import BytesIO

import openpyxl
import pytest
from flask import Flask
from playwright.sync_api import Page, expect

from labapp.imports import jobs as import_jobs
from labapp.worker import Upkeep, run
from tests.browser.axe import assert_no_serious_violations
from tests.browser.conftest import BROWSER_MARKS, create_entities, log_in

pytestmark = BROWSER_MARKS

WIDTHS = (1366, 768)
BAD = b"Name,Volume (mL),Colour\nB-1,1,red\nB-2,plenty,blue\nB-3,2,green\n"
GOOD = b"Name,Volume (mL),Colour\nG-1,1,red\nG-2,1.5,blue\n"


@contextmanager
def worker(app: Flask) -> Iterator[None]:
    """The worker's import upkeep running in a thread for the block."""
    stop = threading.Event()

    def work() -> None:
        with app.app_context():
            run(stop, [Upkeep("spreadsheet imports", import_jobs.upkeep)])

    thread = threading.Thread(target=work, name="import-worker")
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=60)


def _fits(page: Page) -> None:
    """Nothing is cut off sideways, and axe-core finds nothing serious."""
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert_no_serious_violations(page)


def _upload(page: Page, content: bytes, name: str) -> None:
    page.set_input_files("#import-file", files=[
        {"name": name, "mimeType": "text/csv", "buffer": content}])
    page.click("#upload-submit")
    expect(page.locator("#mapping-table")).to_be_visible()


@pytest.mark.parametrize("width", WIDTHS)
def test_import_samples_through_the_wizard(page: Page, live_server: str, live_app: Flask,
                                           width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, live_server)
    page.goto("/entities/Sample")
    page.click("#import-entities")
    expect(page.locator("#import-class")).to_have_value("Sample")
    _fits(page)

    # A file with an error: the dry run tells which row, and Commit stays disabled.
    _upload(page, BAD, "plates 2026-11-25.csv")
    expect(page.locator("#column-0")).to_have_value("name")
    expect(page.locator("#column-1")).to_have_value("amount")
    page.select_option("#column-2", "attributes.Colour")
    expect(page.locator("#save-as")).to_have_value("plates")
    _fits(page)
    page.click("#dry-run")
    expect(page.locator("#import-progress")).to_contain_text("Waiting for the worker")
    expect(page.locator("#import-progress progress")).to_be_visible()
    # No worker runs yet: the page says so, and how an administrator starts one.
    notice = page.locator("#import-worker")
    expect(notice).to_contain_text("No worker is running, so this import waits")
    expect(notice.locator("code")).to_have_text("flask --app labapp worker")
    _fits(page)
    with worker(live_app):
        expect(page.locator("#count-error")).to_have_text("1", timeout=30_000)
        expect(notice).to_have_count(0)
    expect(page.locator("#count-create")).to_have_text("2")
    expect(page.locator("#commit-import")).to_be_disabled()
    expect(page.locator("#import-rows .import-row")).to_have_count(3)
    _fits(page)
    page.click("#show-errors")
    expect(page.locator("#import-rows .import-row")).to_have_count(1)
    expect(page.locator("#import-rows")).to_contain_text("Volume (mL)")

    with page.expect_download() as csv_download:
        page.click("#annotated-csv")
    with open(csv_download.value.path(), encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0][:3] == ["Name", "Volume (mL)", "Colour"] and len(rows) == 4
    assert "error" in rows[2] and "create" in rows[1]
    with page.expect_download() as xlsx_download:
        page.click("#annotated-xlsx")
    content = BytesIO(xlsx_download.value.path().read_bytes())  # the path has no .xlsx
    sheet = openpyxl.load_workbook(content, read_only=True).active
    values = [list(row) for row in sheet.iter_rows(values_only=True)]
    assert values[0][:3] == ["Name", "Volume (mL)", "Colour"] and "error" in values[2]

    # The corrected file finds the saved mapping, and its dry run is committed by keyboard.
    page.goto("/import?eClass=Sample")
    _upload(page, GOOD, "plates 2026-11-26.csv")
    expect(page.locator("#column-2")).to_have_value("attributes.Colour")
    page.click("#dry-run")
    with worker(live_app):
        expect(page.locator("#count-create")).to_have_text("2", timeout=30_000)
        commit = page.locator("#commit-import")
        expect(commit).to_be_enabled()
        commit.focus()
        page.keyboard.press("Enter")
        expect(page.locator("#import-done")).to_contain_text("2 created", timeout=30_000)
    expect(page.locator(".written-entities a")).to_have_count(2)
    _fits(page)
    page.click("#written-list")
    expect(page.locator("#entity-table tbody tr")).to_have_count(2)
    expect(page.locator("#entity-table")).to_contain_text("G-2")


CLASH = (b"Name,Expiry,Location,Slot\nC-1,03/04/2026,Bench box,A1\n"
         b"C-2,25/12/2026,Bench box,A1\nC-3,2026-01-01,Bench box,\n")
RACE = b"Name,Location,Slot\nR-1,Bench box,B1\nR-2,Bench box,B2\n"


def _shows_error(page: Page, text: str) -> None:
    """The error row holds ``text`` and its errors cell lies inside the window, not behind
    a sideways scroll."""
    row = page.locator("#import-rows .import-row.outcome-error")
    expect(row).to_have_count(1)
    expect(row).to_contain_text(text)
    cell = row.locator("td").last
    box = cell.bounding_box()
    assert box is not None
    assert box["x"] >= 0 and box["x"] + box["width"] <= page.evaluate("window.innerWidth")


@pytest.mark.parametrize("width", WIDTHS)
def test_storage_errors_on_the_dry_run_and_on_a_failed_commit(
        page: Page, live_server: str, live_app: Flask, width: int) -> None:
    """Issue 32 §4: a row whose date another row settles still gets its slot checked; a
    slot taken after the dry run fails the commit on its row, both said in words."""
    page.set_viewport_size({"width": width, "height": 900})
    box, = create_entities(live_server, {"eClass": "Location", "name": "Bench box",
                                         "rows": 2, "columns": 2})
    log_in(page, live_server)
    page.goto("/import?eClass=Sample")
    _upload(page, CLASH, "clash.csv")
    page.click("#dry-run")
    with worker(live_app):
        expect(page.locator("#count-error")).to_have_text("1", timeout=30_000)
    expect(page.locator("#count-create")).to_have_text("2")
    expect(page.locator("#commit-import")).to_be_disabled()
    _shows_error(page, "slot A1 of Bench box is also given to row 2")
    expect(page.locator("#import-rows")).not_to_contain_text(box["id"])
    _fits(page)

    page.goto("/import?eClass=Sample")
    _upload(page, RACE, "race.csv")
    page.click("#dry-run")
    with worker(live_app):
        expect(page.locator("#count-create")).to_have_text("2", timeout=30_000)
        create_entities(live_server, {"eClass": "Sample", "name": "Taker",
                                      "locationID": box["id"], "position": "B2"})
        page.click("#commit-import")
        expect(page.locator("#import-failed")).to_contain_text("1 row has an error",
                                                               timeout=30_000)
    expect(page.locator("#count-error")).to_have_text("1")
    _shows_error(page, "slot B2 of Bench box is taken by Taker")
    _fits(page)
