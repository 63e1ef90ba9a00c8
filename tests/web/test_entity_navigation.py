"""The hierarchy, suggestion, uniqueness and status parts of the entity pages through the
test client: breadcrumbs and the children tree, what another department may see of them,
the fragments the forms ask for as the user types, and status changes by button."""
from __future__ import annotations

import re
from collections.abc import Callable
from html import unescape
from typing import Any

import pytest

from tests.conftest import ADMIN_PASSWORD, DEFAULT_DEPARTMENT, ApiClient
from tests.helpers.pages import HTMX, page_login, post_form, section
from tests.web.conftest import fetch, grant, html_of, save


@pytest.fixture
def lab(api_as: Callable[..., ApiClient], author: str,
        other_department: str) -> dict[str, dict[str, Any]]:
    """Names → entities, made by the administrator, in the default department unless said:

    Growth curve (experiment) > Mixing (step) > Culture (sample) > Aliquot (sample) >
    Drop (sample); Growth curve > Away step (other department) > Orphan (sample).
    """
    items = [
        {"eClass": "Experiment", "id": "#exp", "name": "Growth curve"},
        {"eClass": "Step", "id": "#step", "name": "Mixing", "experimentID": "#exp"},
        {"eClass": "Sample", "id": "#culture", "name": "Culture", "stepID": "#step"},
        {"eClass": "Sample", "id": "#aliquot", "name": "Aliquot", "parentID": "#culture"},
        {"eClass": "Sample", "id": "#drop", "name": "Drop", "parentID": "#aliquot"},
        {"eClass": "Step", "id": "#away", "name": "Away step", "experimentID": "#exp",
         "departmentID": other_department},
        {"eClass": "Sample", "id": "#orphan", "name": "Orphan", "stepID": "#away",
         "departmentID": DEFAULT_DEPARTMENT},
    ]
    admin = api_as("admin", password=ADMIN_PASSWORD)
    saved = save(admin, *items)
    return {item["name"]: entity for item, entity in zip(items, saved, strict=True)}


def tree_names(html: str) -> list[str]:
    """The names in the rows of a children ``<ul>``, in order."""
    return re.findall(r'<a href="/entities/\w+/[^"]+">([^<]+)</a>\s*<span', html)


# ---- Hierarchy --------------------------------------------------------------------------------

def test_breadcrumb_lists_the_ancestors_root_first(signed_in, lab):
    html = html_of(signed_in.get(f"/entities/Sample/{lab['Drop']['id']}"))
    crumbs = section(html, "ancestors")
    links = re.findall(r'<a href="(/entities/[^"]+)"[^>]*>([^<]+)</a>', crumbs)
    assert links == [(f"/entities/Experiment/{lab['Growth curve']['id']}", "Growth curve"),
                     (f"/entities/Step/{lab['Mixing']['id']}", "Mixing"),
                     (f"/entities/Sample/{lab['Culture']['id']}", "Culture"),
                     (f"/entities/Sample/{lab['Aliquot']['id']}", "Aliquot")]
    assert '<li aria-current="page">Drop</li>' in crumbs
    assert html.index('id="ancestors"') < html.index('id="entity-heading"'), "above the title"
    root = html_of(signed_in.get(f"/entities/Experiment/{lab['Growth curve']['id']}"))
    assert 'id="ancestors"' not in root


def test_detail_page_shows_one_level_of_children_with_toggles(signed_in, lab):
    html = html_of(signed_in.get(f"/entities/Step/{lab['Mixing']['id']}"))
    tree = section(html, "hierarchy")
    assert tree_names(tree) == ["Culture"]
    culture = lab["Culture"]["id"]
    # Without JavaScript the toggle is a link to the child's page; htmx loads its children.
    assert re.search(rf'<a class="tree-toggle" href="/entities/Sample/{culture}"[^>]*'
                     rf'hx-get="/entities/Sample/{culture}/children\?nested=1"', tree)
    assert 'class="pager' not in tree, "one page holds them all"
    leaf = html_of(signed_in.get(f"/entities/Sample/{lab['Drop']['id']}"))
    assert 'id="no-children"' in leaf


def test_children_block_answers_htmx_alone(signed_in, lab):
    path = f"/entities/Sample/{lab['Culture']['id']}/children"
    response = signed_in.get(path, headers=HTMX)
    html = html_of(response)
    assert response.status_code == 200
    assert "<html" not in html and html.strip().startswith('<div class="tree-page">')
    assert tree_names(html) == ["Aliquot"]
    assert f'hx-get="/entities/Sample/{lab["Aliquot"]["id"]}/children?nested=1"' in html
    plain = signed_in.get(path)
    assert plain.status_code == 303
    assert plain.headers["Location"] == f"/entities/Sample/{lab['Culture']['id']}"
    assert signed_in.get("/entities/Sample/SAM99999/children", headers=HTMX).status_code == 404


def pager_links(html: str) -> dict[str, dict[str, str]]:
    """The links of a children pager by ``rel``: their attributes, unescaped."""
    links = {}
    for tag in re.findall(r'<a class="button button-secondary" rel=[^>]*>', html):
        attributes = dict(re.findall(r'([\w-]+)="([^"]*)"', tag))
        links[attributes["rel"]] = {name: unescape(value) for name, value in attributes.items()}
    return links


@pytest.fixture
def crowded(api: ApiClient) -> dict[str, Any]:
    """A sample with 55 samples in it and 50 notes about it: 105 children, three pages."""
    (rack,) = save(api, {"eClass": "Sample", "name": "Rack"})
    save(api, *({"eClass": "Sample", "name": f"Tube {number:02d}", "parentID": rack["id"]}
                for number in range(55)),
         *({"eClass": "Note", "name": f"Note {number:02d}", "subjectID": rack["id"],
            "content": "checked"} for number in range(50)))
    return rack


def test_children_are_paged_like_the_lists(signed_in, crowded):
    path = f"/entities/Sample/{crowded['id']}"
    first = section(html_of(signed_in.get(path)), "hierarchy")
    assert tree_names(first) == [f"Tube {number:02d}" for number in range(50)]
    assert "Children <span class=\"muted small\">(105)</span>" in first
    assert "1–50 of 105" in first
    links = pager_links(first)
    assert list(links) == ["next"]
    assert links["next"]["href"] == f"{path}?skip=50#hierarchy"
    assert links["next"]["hx-get"] == f"{path}/children?skip=50"
    assert links["next"]["hx-push-url"] == links["next"]["href"]

    # The next page, swapped in by htmx: the last tubes, then the notes (class order).
    second = signed_in.get(links["next"]["hx-get"], headers=HTMX)
    html = html_of(second)
    assert second.status_code == 200 and "<html" not in html
    assert tree_names(html) == ([f"Tube {number:02d}" for number in range(50, 55)]
                                + [f"Note {number:02d}" for number in range(45)])
    assert "51–100 of 105" in html
    assert {rel: link["hx-get"] for rel, link in pager_links(html).items()} == {
        "prev": f"{path}/children", "next": f"{path}/children?skip=100"}

    # Without JavaScript the same page is the detail page at ?skip=; the last one is short.
    third = section(html_of(signed_in.get(f"{path}?skip=100")), "hierarchy")
    assert tree_names(third) == [f"Note {number:02d}" for number in range(45, 50)]
    assert list(pager_links(third)) == ["prev"]
    plain = signed_in.get(f"{path}/children?skip=100")
    assert (plain.status_code, plain.headers["Location"]) == (303, f"{path}?skip=100")


def test_nested_children_pages_stay_in_their_subtree(signed_in, crowded):
    nested = html_of(signed_in.get(f"/entities/Sample/{crowded['id']}/children?nested=1",
                                   headers=HTMX))
    link = pager_links(nested)["next"]
    assert link["hx-get"] == f"/entities/Sample/{crowded['id']}/children?skip=50&nested=1"
    assert "hx-push-url" not in link, "a subtree's page leaves the address alone"


@pytest.mark.parametrize("skip", ["-1", "many"])
def test_a_bad_children_page_is_a_400(signed_in, crowded, skip):
    path = f"/entities/Sample/{crowded['id']}"
    assert signed_in.get(path, query_string={"skip": skip}).status_code == 400
    fragment = signed_in.get(f"{path}/children", query_string={"skip": skip}, headers=HTMX)
    assert fragment.status_code == 400


def test_other_departments_ancestors_and_children_are_left_out(client, lab, make_user,
                                                               other_department):
    # alice: the away step is neither a child of the experiment nor the orphan's parent.
    page_login(client, "alice")
    experiment = html_of(client.get(f"/entities/Experiment/{lab['Growth curve']['id']}"))
    assert tree_names(section(experiment, "hierarchy")) == ["Mixing"]
    orphan = html_of(client.get(f"/entities/Sample/{lab['Orphan']['id']}"))
    assert 'id="ancestors"' not in orphan
    # dave, of the other department, sees only the away step: no breadcrumb, no children.
    make_user("dave", department_id=other_department)
    page_login(client, "dave")
    away = html_of(client.get(f"/entities/Step/{lab['Away step']['id']}"))
    assert 'id="ancestors"' not in away and 'id="no-children"' in away
    hidden = client.get(f"/entities/Step/{lab['Mixing']['id']}/children", headers=HTMX)
    assert hidden.status_code == 404


# ---- Suggestions and uniqueness ---------------------------------------------------------------

def test_reference_inputs_ask_for_suggestions(signed_in, lab):
    html = html_of(signed_in.get("/entities/Sample/new"))
    step = re.search(r'<input id="field-stepID"[^>]*>', html).group(0)
    assert 'hx-get="/entities/suggest/Sample/stepID"' in step
    assert 'hx-target="#field-stepID-suggest"' in step
    assert '<ul id="field-stepID-suggest"' in html
    origin = re.search(r'<input id="field-originID"[^>]*>', html).group(0)
    assert "hx-get" not in origin, "a reference to any class has no suggestions"


def test_suggestions_list_only_visible_entities(signed_in, lab, make_user, api_as,
                                                other_department):
    again = save(api_as("alice"), {"eClass": "Step", "name": "Mixing again"})[0]["id"]
    make_user("dave", department_id=other_department)
    save(api_as("dave"), {"eClass": "Step", "name": "Mixing elsewhere"})
    response = signed_in.get("/entities/suggest/Sample/stepID", query_string={"stepID": "mix"},
                             headers=HTMX)
    html = html_of(response)
    assert response.status_code == 200 and "<html" not in html
    choices = re.findall(r'data-suggest-for="field-stepID" data-value="([^"]+)">([^<]+)<', html)
    assert [text for _, text in choices] == [f"{lab['Mixing']['id']} — Mixing",
                                             f"{again} — Mixing again"]
    assert "elsewhere" not in html and "Away" not in html
    empty = html_of(signed_in.get("/entities/suggest/Sample/stepID", headers=HTMX))
    assert "<li>" not in empty
    assert signed_in.get("/entities/suggest/Sample/originID").status_code == 404
    assert signed_in.get("/entities/suggest/Sample/name").status_code == 404


def test_uniqueness_of_names_and_barcodes(signed_in, sample, api):
    form = html_of(signed_in.get("/entities/Sample/new"))
    name = re.search(r'<input id="field-name"[^>]*>', form).group(0)
    assert 'hx-get="/entities/unique/Sample/name"' in name
    assert 'hx-target="#field-name-unique"' in name

    def check(field: str, value: str, **extra: str) -> str:
        response = signed_in.get(f"/entities/unique/Sample/{field}",
                                 query_string={field: value, **extra}, headers=HTMX)
        assert response.status_code == 200
        return html_of(response)

    assert "already used" in check("name", "Broth")
    assert "✓ available" in check("name", "Fresh broth")
    save(api, {"eClass": "Sample", "name": "Coded", "barcode": "BC-1"})
    assert "already used" in check("barcode", "BC-1")
    assert "✓ available" in check("barcode", "BC-2")
    # On the edit form the entity's own value is free.
    edit = html_of(signed_in.get(f"/entities/Sample/{sample['id']}/edit"))
    assert f'hx-get="/entities/unique/Sample/name?id={sample["id"]}"' in edit
    assert "✓ available" in check("name", "Broth", id=sample["id"])
    assert "available" not in check("name", "")
    assert signed_in.get("/entities/unique/Sample/amount").status_code == 404


# ---- Status -----------------------------------------------------------------------------------

def status_buttons(html: str) -> list[str]:
    return re.findall(r'<button type="submit" name="status" value="(\w+)"', html)


def test_status_buttons_offer_the_allowed_transitions(signed_in, sample):
    html = html_of(signed_in.get(f"/entities/Sample/{sample['id']}"))
    assert status_buttons(html) == ["InProgress", "Canceled", "Discarded"]
    # The keys post; people read the words (issue 32 §5).
    assert 'id="status-to-InProgress">In progress</button>' in html
    assert '<span class="badge" id="entity-status">Initial</span>' in html
    edit = html_of(signed_in.get(f"/entities/Sample/{sample['id']}/edit"))
    select = section(edit, "field-status")
    assert re.findall(r'<option value="(\w+)"[^>]*>([\w ]+)</option>', select) == [
        ("Initial", "Initial"), ("InProgress", "In progress"), ("Canceled", "Canceled"),
        ("Discarded", "Discarded")]


def test_read_only_users_get_no_status_buttons(app, client, sample, make_user,
                                               other_department):
    make_user("dave", department_id=other_department)
    grant(app, "dave", DEFAULT_DEPARTMENT, "Read")
    page_login(client, "dave")
    path = f"/entities/Sample/{sample['id']}"
    html = html_of(client.get(path))
    assert 'id="status-form"' not in html and status_buttons(html) == []
    refused = post_form(client, f"{path}/status", {"status": "InProgress", "version": "1"})
    assert refused.status_code == 403


def test_status_change_by_button(signed_in, sample, api):
    path = f"/entities/Sample/{sample['id']}"
    response = post_form(signed_in, f"{path}/status",
                         {"status": "InProgress", "version": str(sample["version"])})
    assert response.status_code == 303 and response.headers["Location"] == path
    stored = fetch(api, "Sample", sample["id"])
    assert stored["status"] == "InProgress"
    page = html_of(signed_in.get(path))
    assert f"Sample {sample['id']} is now In progress." in page
    assert status_buttons(page) == ["Completed", "Canceled", "Initial", "Discarded"]
    assert "<strong>Status changed</strong> from Initial to In progress" in page
    assert '<span class="badge" id="entity-status">In progress</span>' in page
    assert "InProgress<" not in page and ">InProgress" not in page


def test_refused_status_changes_answer_409_with_the_reason(signed_in, sample):
    path = f"/entities/Sample/{sample['id']}/status"
    version = str(sample["version"])
    invalid = post_form(signed_in, path, {"status": "Completed", "version": version})
    assert invalid.status_code == 409
    error = section(html_of(invalid), "status-error")
    assert "Status not changed." in error and "Completed" in error
    assert post_form(signed_in, path, {"status": "InProgress", "version": version}
                     ).status_code == 303
    stale = post_form(signed_in, path, {"status": "Completed", "version": version})
    assert stale.status_code == 409
    html = html_of(stale)
    assert "reload it" in section(html, "status-error")
    # The page shows the stored status and version again, so a second try works.
    assert f'name="version" value="{int(version) + 1}"' in html
    assert status_buttons(html) == ["Completed", "Canceled", "Initial", "Discarded"]
