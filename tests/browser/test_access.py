"""Access management in real headless Chromium, the issue's scenario end to end: an
administrator creates a user of another department, grants them Read on a project through the
suggest box; they see the project's sample but cannot edit it; Write is granted and the edit
succeeds (fixtures and skip rules in ``conftest.py``)."""
from __future__ import annotations

from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import BROWSER_MARKS
from tests.conftest import ADMIN_PASSWORD
from tests.helpers.browser import log_in_as, seed

pytestmark = BROWSER_MARKS

DAVE_PASSWORD = "dave digs the soil"


def test_read_then_write_on_a_project(page: Page, live_server: str, browser: Browser) -> None:
    (microbiology,) = seed(live_server, {"eClass": "Department", "name": "Microbiology"})
    (project,) = seed(live_server, {"eClass": "Project", "name": "Soil survey"})
    (sample,) = seed(live_server, {"eClass": "Sample", "name": "Soil core A",
                                   "projectID": project["id"]})
    assert sample["departmentID"] != microbiology["id"]

    # The administrator creates Dave, a member of Microbiology.
    log_in_as(page, live_server, "admin", ADMIN_PASSWORD)
    page.click("#admin-link")
    page.get_by_role("link", name="Users", exact=True).click()
    page.fill("#new-username", "dave")
    page.fill("#new-name", "Dave Digger")
    page.select_option("#new-department", microbiology["id"])
    page.fill("#new-password", DAVE_PASSWORD)
    page.click("#create-user")
    page.wait_for_url(f"{live_server}/admin/users/dave")
    expect(page.locator(".flash-success")).to_have_text("User dave created.")

    # ... and grants him Read on the project, finding him with the suggest box.
    page.click("#admin-link")
    page.get_by_role("link", name="Projects", exact=True).click()
    page.get_by_role("link", name=project["id"], exact=True).click()
    access_url = f"{live_server}/admin/projects/{project['id']}/access"
    page.wait_for_url(access_url)
    page.fill("#grantee", "digg")
    page.locator("#grantee-suggestions button", has_text="Dave Digger").click()
    expect(page.locator("#grantee")).to_have_value("dave")
    expect(page.locator("#grantee-suggestions li")).to_have_count(0)
    page.select_option("#access-type", "Read")
    page.click("#grant-button")
    expect(page.locator("#access-notice")).to_have_text("dave was granted Read access.")
    dave_row = page.locator("#grant-user-dave")
    expect(dave_row.get_by_label("Access of dave", exact=True)).to_have_value("Read")
    assert page.url == access_url, "htmx swapped the grants in place"

    # Dave sees the sample but may not change it.
    dave_context = browser.new_context(base_url=live_server)
    try:
        dave = dave_context.new_page()
        log_in_as(dave, live_server, "dave", DAVE_PASSWORD)
        dave.goto("/entities/Sample")
        dave.get_by_role("link", name=sample["id"], exact=True).click()
        detail_url = f"{live_server}/entities/Sample/{sample['id']}"
        dave.wait_for_url(detail_url)
        expect(dave.locator("#entity-heading")).to_contain_text("Soil core A")
        expect(dave.locator("#read-only")).to_be_visible()
        expect(dave.locator("#edit-entity")).to_have_count(0)
        refused = dave.goto(f"{detail_url}/edit")
        assert refused is not None and refused.status == 403
        expect(dave.locator(".problem-title")).to_have_text("Forbidden")

        # The administrator changes Read to Write in the table.
        dave_row.get_by_label("Access of dave", exact=True).select_option("Write")
        dave_row.get_by_role("button", name="Change access of dave").click()
        expect(page.locator("#access-notice")).to_have_text("The access of dave is now Write.")
        write = page.locator("#grant-user-dave").get_by_label("Access of dave", exact=True)
        expect(write).to_have_value("Write")

        # Now Dave's edit succeeds.
        dave.goto(detail_url)
        dave.click("#edit-entity")
        dave.fill("#field-name", "Soil core A, sieved")
        dave.click("#save-entity")
        dave.wait_for_url(detail_url)
        expect(dave.locator(".flash-success")).to_have_text(f"Sample {sample['id']} saved.")
        expect(dave.locator("#entity-heading")).to_contain_text("Soil core A, sieved")
    finally:
        dave_context.close()


def test_remove_a_grant_and_delete_a_department(page: Page, live_server: str) -> None:
    (department,) = seed(live_server, {"eClass": "Department", "name": "Short-lived"})
    seed(live_server, {"eClass": "Sample", "departmentID": department["id"]})
    log_in_as(page, live_server, "admin", ADMIN_PASSWORD)
    page.goto(f"/admin/departments/{department['id']}/access")
    page.fill("#grantee", "carol")
    page.click("#grant-button")
    expect(page.locator("#grant-user-carol")).to_be_visible()
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Remove access of carol").click()
    expect(page.locator("#access-notice")).to_have_text("The access of carol was removed.")
    expect(page.locator("#no-grants")).to_be_visible()

    # It still owns a sample: refused with the reason, then forced (the forms ask first).
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#delete-button")
    expect(page.locator("#delete-error")).to_contain_text("still owns or is referenced by")
    page.check("#delete-force")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#delete-button")
    page.wait_for_url(f"{live_server}/admin/departments")
    expect(page.locator(".flash-success")).to_have_text(
        f"Department {department['id']} was deleted.")
