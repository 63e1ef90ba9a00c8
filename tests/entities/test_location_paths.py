"""Where a tube is, for whoever may see the tube (issue 19): the sample page, the Sample
table and the search results show its location by name path, even when the location belongs
to a department the viewer may not see (then without a link), reading every location of a
page in one query."""
from __future__ import annotations

import re
from collections.abc import Callable
from html import unescape

import pytest
from flask import Flask

from tests.conftest import ApiClient
from tests.entities.conftest import body_of, save
from tests.helpers.statements import statements

PATH = "Lab 2 / Freezer -80 / Rack 3 / Box 12"


def html(response) -> str:
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_data(as_text=True)


def text_of(fragment: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def check_in(api: ApiClient, location_id: str, sample: str, position: str) -> None:
    body_of(api.post(f"/api/storage/location/{location_id}/checkin",
                     json=[{"eClass": "Sample", "id": sample, "position": position}]), 200)


@pytest.fixture
def cold_store(admin: ApiClient, department: Callable[..., str]) -> dict[str, str]:
    """Another department's Lab 2 / Freezer -80 / Rack 3 / Box 12 (a 2 × 3 grid), and a
    second box in the same rack; their ids by name."""
    store = department("Cold store")
    made = body_of(admin.post("/api/storage/location", json=[
        {"id": "#lab", "name": "Lab 2", "departmentID": store},
        {"id": "#freezer", "name": "Freezer -80", "parentID": "#lab"},
        {"id": "#rack", "name": "Rack 3", "parentID": "#freezer"},
        {"name": "Box 12", "parentID": "#rack", "rows": 2, "columns": 3},
        {"name": "Box 13", "parentID": "#rack", "rows": 2, "columns": 3}]), 201)
    return {location["name"]: location["id"] for location in made}


@pytest.fixture
def alice(member: Callable[..., ApiClient]) -> ApiClient:
    return member("alice")


@pytest.fixture
def tubes(admin: ApiClient, alice: ApiClient, cold_store: dict[str, str]) -> list[str]:
    """Three of alice's tubes, stored by the administrator in the cold store's boxes."""
    made = [tube["id"] for tube in save(alice, *({"eClass": "Sample", "name": f"Tube {n}"}
                                                  for n in range(3)))]
    check_in(admin, cold_store["Box 12"], made[0], "B2")
    check_in(admin, cold_store["Box 12"], made[1], "A1")
    check_in(admin, cold_store["Box 13"], made[2], "A3")
    return made


def test_the_hidden_box_is_hidden_but_the_tube_is_not(alice: ApiClient,
                                                      cold_store: dict[str, str],
                                                      tubes: list[str]) -> None:
    assert alice.get(f"/api/storage/location/{cold_store['Box 12']}").status_code == 404
    assert body_of(alice.get(f"/api/entity/Sample/{tubes[0]}"), 200)["locationID"] \
        == cold_store["Box 12"]


def test_the_sample_page_names_the_hidden_place_without_a_link(
        alice: ApiClient, cold_store: dict[str, str], tubes: list[str]) -> None:
    page = html(alice.get(f"/entities/Sample/{tubes[0]}"))
    stored_in = re.search(r'<p class="stored-in" id="stored-in">.*?</p>', page, re.S).group(0)
    assert text_of(stored_in) == f"Stored in {PATH} · B2"
    assert "<a " not in stored_in and 'id="stored-in-hidden"' in page
    fields = page.split('id="fields"')[1].split("</section>")[0]
    assert f"<dd>{PATH} · B2</dd>" in fields
    assert "/storage/locations/" not in page


def test_the_table_shows_each_place_by_path_in_one_query(
        app: Flask, admin: ApiClient, alice: ApiClient, cold_store: dict[str, str],
        tubes: list[str]) -> None:
    with statements(app) as seen:
        page = html(alice.get("/entities/Sample", query_string={"orderby": "name"}))
    headers = re.findall(r'<th scope="col"[^>]*>(.*?)</th>', page, re.S)
    assert "Location" in [text_of(header) for header in headers]
    # A list names a place by its last two parts, the whole path in its tooltip (issue 32).
    cells = re.findall(r'<td[^>]*><span title="([^"]*)">([^<]*)</span></td>', page)
    for path, short in ((PATH, "Rack 3 / Box 12"), (PATH, "Rack 3 / Box 12"),
                        (PATH.replace("12", "13"), "Rack 3 / Box 13")):
        assert any(full.startswith(path) and shown.startswith(short) for full, shown in cells)
    assert (f"{PATH} · B2", "Rack 3 / Box 12 · B2") in cells
    assert "/storage/locations/" not in page
    assert len([statement for statement in seen if "location.hierarchy" in statement]) == 1
    # The administrator, who may open the boxes, gets them linked with their ids.
    page = html(admin.get("/entities/Sample", query_string={"orderby": "name"}))
    assert (f'<a href="/storage/locations/{cold_store["Box 12"]}?slot=B2" '
            f'title="{PATH} · B2">Rack 3 / Box 12 · B2</a> '
            f'<span class="muted ref-id">{cold_store["Box 12"]}</span>') in page


def test_search_results_show_where_a_tube_is(app: Flask, alice: ApiClient,
                                             cold_store: dict[str, str],
                                             tubes: list[str]) -> None:
    # "like" searches the database itself, not the index files the suite shares.
    with statements(app) as seen:
        page = html(alice.get("/search", query_string={"q": "Tube", "mode": "like"}))
    hits = re.findall(r'<li class="search-hit" data-id="([^"]+)".*?</li>', page, re.S)
    assert sorted(hits) == sorted(tubes)
    places = [text_of(place) for place in re.findall(r'<div class="hit-place">(.*?)</div>',
                                                     page, re.S)]
    assert sorted(places) == sorted([f"Stored in {PATH} · B2", f"Stored in {PATH} · A1",
                                     f"Stored in {PATH.replace('12', '13')} · A3"])
    assert "/storage/locations/" not in page
    assert len([statement for statement in seen if "location.hierarchy" in statement]) == 1


def test_a_tube_that_is_not_stored_shows_no_place(alice: ApiClient) -> None:
    tube, = save(alice, {"eClass": "Sample", "name": "Loose tube"})
    page = html(alice.get("/search", query_string={"q": tube["id"], "mode": "exact"}))
    assert f'data-id="{tube["id"]}"' in page and "hit-place" not in page
    page = html(alice.get(f"/entities/Sample/{tube['id']}"))
    assert text_of(re.search(r'<p class="stored-in".*?</p>', page, re.S).group(0)) \
        == "Not stored"
