"""The entity create and edit forms through the test client: generated from the registry,
inline errors, attributes, and the version check of a stale edit."""
from __future__ import annotations

import json
import re

import pytest

from tests.conftest import DEFAULT_DEPARTMENT
from tests.helpers.pages import post_form
from tests.web.conftest import fetch, hidden, html_of, input_value, save

# ---- Create -----------------------------------------------------------------------------------

def test_create_form_is_generated_from_the_registry(signed_in):
    html = html_of(signed_in.get("/entities/Sample/new?experimentID=EXP00042"))
    assert '<input id="field-amount" name="amount" type="number" value="" step="any">' in html
    assert '<input id="field-dateTaken" name="dateTaken" type="date" value="">' in html
    assert '<textarea id="field-description" name="description"' in html
    assert input_value(html, "experimentID") == "EXP00042"
    statuses = re.search(r'<select id="field-status".*?</select>', html, re.S).group(0)
    assert re.findall(r"<option[^>]*>([\w ]+)</option>", statuses) == [
        "Initial", "In progress", "Completed", "Canceled", "Discarded"]
    assert '<option value="InProgress">In progress</option>' in statuses
    assert "createdUtc" not in html and 'name="version"' not in html
    assert 'name="attr_key"' in html and 'data-add-row="attribute-row-template"' in html


def test_create_with_attributes(signed_in, api):
    response = post_form(signed_in, "/entities/Sample/new", {
        "name": "Culture 7", "amount": "12", "dateTaken": "2026-03-01", "status": "InProgress",
        "attr_key": ["ph", "strain", "sterile", ""], "attr_value": ["6.8", "K-12", "true", ""]})
    assert response.status_code == 303
    new_id = response.headers["Location"].rsplit("/", 1)[1]
    stored = fetch(api, "Sample", new_id)
    assert (stored["name"], stored["amount"], stored["dateTaken"], stored["status"]) == (
        "Culture 7", 12.0, "2026-03-01", "InProgress")
    assert stored["attributes"] == {"ph": 6.8, "strain": "K-12", "sterile": True}
    assert f"Sample {new_id} created." in html_of(signed_in.get(response.headers["Location"]))


def test_create_converts_local_datetimes_to_utc(signed_in, api):
    response = post_form(signed_in, "/entities/Fermentation/new",
                         {"name": "F1", "startTime": "2026-03-01T12:30"})
    assert response.status_code == 303
    stored = fetch(api, "Fermentation", response.headers["Location"].rsplit("/", 1)[1])
    assert stored["startTime"] == "2026-03-01T12:30:00.000Z"


def test_add_row_without_javascript_keeps_the_input(signed_in):
    response = post_form(signed_in, "/entities/Sample/new", {
        "name": "Kept", "attr_key": "ph", "attr_value": "7", "add_row": "1"})
    html = html_of(response)
    assert response.status_code == 200
    assert input_value(html, "name") == "Kept"
    assert html.count('<tr class="attribute-row">') == 3, "ph, the new row, the template"


@pytest.mark.parametrize(("data", "field", "message"), [
    ({"amount": "lots"}, "amount", "expected a number"),
    ({"experimentID": "EXP09999"}, "experimentID", "unknown Experiment &#39;EXP09999&#39;"),
    ({"dateTaken": "yesterday"}, "dateTaken", "expected a date such as 2026-03-01"),
])
def test_create_errors_are_inline_and_keep_the_input(signed_in, data, field, message):
    response = post_form(signed_in, "/entities/Sample/new", {"name": "Mine", **data})
    html = html_of(response)
    assert response.status_code == 400
    assert f'<p class="field-error" id="field-{field}-error">{message}</p>' in html
    assert input_value(html, "name") == "Mine"


@pytest.mark.parametrize(("keys", "values", "message"), [
    (["", "ph"], ["orphan", "7"], "Give every attribute value a key."),
    (["ph", "ph"], ["7", "8"], "The key &#39;ph&#39; is given more than once."),
])
def test_attribute_rows_that_make_no_item_are_inline_errors(signed_in, keys, values, message):
    response = post_form(signed_in, "/entities/Sample/new",
                         {"name": "Rows", "attr_key": keys, "attr_value": values})
    html = html_of(response)
    assert response.status_code == 400
    assert f'<p class="field-error" id="attributes-error">{message}</p>' in html
    assert 'id="form-error"' not in html
    assert re.findall(r'name="attr_value" type="text" value="([^"]*)"', html) == values


def test_forms_are_not_offered_when_the_api_would_refuse(signed_in):
    assert signed_in.get("/entities/Project/new").status_code == 403
    assert signed_in.get("/entities/File/new").status_code == 403
    assert post_form(signed_in, "/entities/User/new", {"id": "eve"}).status_code == 403


# ---- Edit -------------------------------------------------------------------------------------

def test_edit_form_offers_only_allowed_statuses(signed_in, sample):
    html = html_of(signed_in.get(f"/entities/Sample/{sample['id']}/edit"))
    statuses = re.search(r'<select id="field-status".*?</select>', html, re.S).group(0)
    assert re.findall(r'<option value="(\w+)"[^>]*>', statuses) == [
        "Initial", "InProgress", "Canceled", "Discarded"]
    assert 'name="id"' not in html and hidden(html, "version") == "1"


def test_edit_saves_changes_and_the_audit_trail_shows_them(signed_in, api, sample):
    path = f"/entities/Sample/{sample['id']}"
    form = html_of(signed_in.get(f"{path}/edit"))
    response = post_form(signed_in, f"{path}/edit", {
        "version": hidden(form, "version"), "original": hidden(form, "original"),
        "name": "Broth v2", "amount": "2.5", "status": "InProgress", "type": "Other",
        "departmentID": DEFAULT_DEPARTMENT, "userID": "alice",
        "attr_key": ["ph", "volume"], "attr_value": ["7.2", "250"]})
    assert response.status_code == 303
    assert response.headers["Location"] == path
    stored = fetch(api, "Sample", sample["id"])
    assert (stored["name"], stored["status"], stored["version"]) == ("Broth v2", "InProgress", 2)
    assert stored["attributes"] == {"ph": 7.2, "volume": 250}, "colour was removed"
    update = stored["auditEvents"][0]
    assert update["changes"]["name"] == {"old": "Broth", "new": "Broth v2"}
    assert set(update["changes"]) == {"name", "status", "attributes"}, "only what changed"
    html = html_of(signed_in.get(path))
    assert f"Sample {sample['id']} saved." in html
    assert "<del>Broth</del>\n            → <ins>Broth v2</ins>" in html
    assert "<td><code>attributes.colour</code></td>" in html


def test_saving_an_unchanged_form_changes_nothing(signed_in, api, sample):
    path = f"/entities/Sample/{sample['id']}"
    form = html_of(signed_in.get(f"{path}/edit"))
    fields = json.loads(hidden(form, "original"))["fields"]
    response = post_form(signed_in, f"{path}/edit", {
        **fields, "version": "1", "original": hidden(form, "original"),
        "attr_key": ["colour", "ph"], "attr_value": ["amber", "7.2"]})
    assert response.status_code == 303
    assert "Nothing was changed." in html_of(signed_in.get(path))
    assert fetch(api, "Sample", sample["id"])["version"] == 1


def test_edit_errors_are_inline(signed_in, api, sample):
    path = f"/entities/Sample/{sample['id']}/edit"
    form = html_of(signed_in.get(path))
    response = post_form(signed_in, path, {"version": "1", "original": hidden(form, "original"),
                                         "name": "", "amount": "many"})
    html = html_of(response)
    assert response.status_code == 400
    assert '<p class="field-error" id="field-name-error">must not be null</p>' in html
    assert input_value(html, "amount") == "many"
    assert fetch(api, "Sample", sample["id"])["version"] == 1


def test_stale_edit_shows_a_conflict_and_keeps_the_input(signed_in, api, sample):
    path = f"/entities/Sample/{sample['id']}"
    form = html_of(signed_in.get(f"{path}/edit"))
    original = hidden(form, "original")
    fields = json.loads(original)["fields"]
    save(api, {"eClass": "Sample", "id": sample["id"], "description": "changed meanwhile",
               "attributes": {"colour": "green"}}, status=200)
    mine = {**fields, "version": "1", "original": original, "name": "My new name",
            "attr_key": ["colour", "ph", "mine"], "attr_value": ["amber", "7.2", "yes"]}
    response = post_form(signed_in, f"{path}/edit", mine)
    html = html_of(response)
    assert response.status_code == 409
    assert 'id="conflict"' in html and "was changed while you were editing it" in html
    assert "alice saved version 2" in html and "Description, Attributes" in html
    assert input_value(html, "name") == "My new name", "the user's change is kept"
    assert "changed meanwhile</textarea>" in html, "untouched fields show the stored value"
    assert hidden(html, "version") == "2"
    assert re.search(r'value="colour".*?value="green"', html, re.S), "stored attribute"
    assert re.search(r'value="mine".*?value="yes"', html, re.S), "the user's new attribute"
    assert fetch(api, "Sample", sample["id"])["name"] == "Broth", "nothing was saved"

    again = {**json.loads(hidden(html, "original"))["fields"], "name": "My new name",
             "version": hidden(html, "version"), "original": hidden(html, "original"),
             "attr_key": ["colour", "ph", "mine"], "attr_value": ["green", "7.2", "yes"]}
    assert post_form(signed_in, f"{path}/edit", again).status_code == 303
    stored = fetch(api, "Sample", sample["id"])
    assert (stored["name"], stored["description"]) == ("My new name", "changed meanwhile")
    assert stored["attributes"] == {"colour": "green", "ph": 7.2, "mine": "yes"}


def test_conflicting_change_of_the_same_field_shows_the_stored_value(signed_in, api, sample):
    path = f"/entities/Sample/{sample['id']}"
    form = html_of(signed_in.get(f"{path}/edit"))
    original = hidden(form, "original")
    save(api, {"eClass": "Sample", "id": sample["id"], "name": "Theirs"}, status=200)
    response = post_form(signed_in, f"{path}/edit", {
        **json.loads(original)["fields"], "version": "1", "original": original,
        "name": "Mine"})
    html = html_of(response)
    assert response.status_code == 409
    assert input_value(html, "name") == "Mine"
    assert '<p class="field-note" id="field-name-stored">Stored now: <code>Theirs</code></p>' \
        in html
