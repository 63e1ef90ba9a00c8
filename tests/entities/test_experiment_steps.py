"""An experiment's page as a lab member reads it (issue 21 §2): its Steps in step order
(index, then name; those without an index last), the number of samples under each child
counted in one grouped query, and its children paged 50 at a time, with htmx and without."""
from __future__ import annotations

import re
from collections.abc import Callable
from html import unescape
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.conftest import ApiClient
from tests.entities.conftest import body_of, save
from tests.helpers.pages import HTMX, page_login
from tests.helpers.statements import statements


def signed_in(app: Flask, username: str) -> FlaskClient:
    client = app.test_client()
    assert page_login(client, username).status_code == 303
    return client


def tree_rows(page: str) -> list[str]:
    """The text of each row of the top level of the children's tree, in order."""
    tree = page.split('<ul class="tree">', 1)[1].split("</ul>", 1)[0]
    return [" ".join(unescape(re.sub(r"<[^>]+>", " ", row)).split())
            for row in re.findall(r'<li class="tree-item"[^>]*>(.*?)</li>', tree, re.S)]


def sample_reads(seen: list[str]) -> list[str]:
    return [statement for statement in seen if re.search(r"\b(FROM|JOIN) sample\b", statement)]


@pytest.fixture
def lab(admin: ApiClient, member: Callable[..., ApiClient],
        department: Callable[..., str]) -> dict[str, Any]:
    """Alice's experiment with steps out of name order, samples under two of them (one
    derived from another), a plate with a sample, and a sample of another department that
    alice may not see under her step."""
    physics, chemistry = department("Physics"), department("Chemistry")
    alice = member("alice", department_id=physics)
    made = save(
        alice,
        {"eClass": "Experiment", "id": "#exp", "name": "Growth"},
        {"eClass": "Step", "id": "#third", "name": "Alpha", "stepIndex": 3,
         "experimentID": "#exp"},
        {"eClass": "Step", "id": "#first", "name": "Zeta", "stepIndex": 1,
         "experimentID": "#exp"},
        {"eClass": "Step", "id": "#second", "name": "Mid", "stepIndex": 2,
         "experimentID": "#exp"},
        {"eClass": "Step", "name": "Beta", "experimentID": "#exp"},
        {"eClass": "Step", "name": "Aardvark", "experimentID": "#exp"},
        {"eClass": "Sample", "id": "#culture", "name": "Culture", "stepID": "#first"},
        {"eClass": "Sample", "name": "Aliquot", "stepID": "#first", "parentID": "#culture"},
        {"eClass": "Sample", "name": "Harvest", "stepID": "#third"},
        {"eClass": "Plate", "id": "#plate", "name": "Plate 1", "experimentID": "#exp"},
        {"eClass": "Sample", "name": "Well A1", "plateID": "#plate", "well": "A1"},
        {"eClass": "Sample", "name": "Loose", "experimentID": "#exp"})
    ids = {entity["name"]: entity["id"] for entity in made}
    save(admin, {"eClass": "Sample", "name": "Secret", "stepID": ids["Zeta"],
                 "departmentID": chemistry})
    return {"alice": alice, **ids}


def test_steps_in_step_order_with_their_sample_counts(app: Flask, lab: dict[str, Any]) -> None:
    page = signed_in(app, "alice").get(f"/entities/Experiment/{lab['Growth']}")
    assert page.status_code == 200
    rows = tree_rows(page.get_data(as_text=True))
    # Class order first (Steps, then Samples, then Plates), then step index, then name.
    assert [row.split(" Step ")[0].split(" Sample ")[0].split(" Plate ")[0] for row in rows] == [
        "Zeta", "Mid", "Alpha", "Aardvark", "Beta", "Loose", "Plate 1"]
    assert rows[0].endswith("2 samples"), "the culture and its aliquot; not the secret one"
    assert rows[1].endswith("0 samples") and rows[2].endswith("1 sample")
    assert rows[5].endswith("0 samples") and rows[6].endswith("1 sample")
    step = signed_in(app, "alice").get(f"/entities/Step/{lab['Zeta']}").get_data(as_text=True)
    assert tree_rows(step)[0].startswith("Culture") and tree_rows(step)[0].endswith("1 sample")


def test_the_api_tree_lists_steps_in_step_order(lab: dict[str, Any]) -> None:
    tree = body_of(lab["alice"].get(f"/api/query/hierarchy/Experiment/{lab['Growth']}"), 200)
    assert [child["name"] for child in tree["children"]] == [
        "Zeta", "Mid", "Alpha", "Aardvark", "Beta", "Loose", "Plate 1"]


def test_samples_are_counted_in_one_query_however_many_children(
        app: Flask, lab: dict[str, Any]) -> None:
    client = signed_in(app, "alice")
    path = f"/entities/Experiment/{lab['Growth']}"
    with statements(app) as few:
        assert client.get(path).status_code == 200
    save(lab["alice"], *({"eClass": "Step", "name": f"Extra {number}",
                          "experimentID": lab["Growth"]} for number in range(20)))
    with statements(app) as many:
        assert client.get(path).status_code == 200
    assert len(sample_reads(many)) == len(sample_reads(few))
    grouped = [statement for statement in sample_reads(many) if "GROUP BY" in statement]
    assert len(grouped) == 1 and "UNION ALL" in grouped[0]


def test_children_are_paged_with_htmx_and_without(app: Flask, lab: dict[str, Any]) -> None:
    save(lab["alice"], *({"eClass": "Step", "name": f"Step {number:02d}", "stepIndex": number,
                          "experimentID": lab["Growth"]} for number in range(10, 60)))
    client = signed_in(app, "alice")
    first = client.get(f"/entities/Experiment/{lab['Growth']}").get_data(as_text=True)
    assert len(tree_rows(first)) == 50
    assert "1–50 of 57" in first
    following = re.search(r'<a class="button button-secondary" rel="next" href="([^"]+)"\s+'
                          r'hx-get="([^"]+)"', first)
    assert following, "a Next link"
    plain, fragment = unescape(following[1]), unescape(following[2])
    assert plain == f"/entities/Experiment/{lab['Growth']}?skip=50#hierarchy"
    # Without JavaScript: the page at that page of its children.
    second = client.get(plain.split("#")[0]).get_data(as_text=True)
    rows = tree_rows(second)
    assert len(rows) == 7 and rows[0].startswith("Step 57") and rows[-1].startswith("Plate 1")
    assert rows[-1].endswith("1 sample") and 'rel="prev"' in second
    # With htmx: the block alone, the same rows and counts.
    swapped = client.get(fragment, headers=HTMX)
    assert swapped.status_code == 200
    assert tree_rows(swapped.get_data(as_text=True)) == rows
    assert "<html" not in swapped.get_data(as_text=True)
