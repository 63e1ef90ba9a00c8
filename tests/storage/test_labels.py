"""Labels (issue 19): names shortened from the middle, owners' initials, the two formats, and
the labels page asked for by scanned barcodes or ids, among what the caller may see."""
from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from flask import Flask
from flask.testing import FlaskClient

from labapp.db import transaction
from labapp.errors import InvalidInput
from labapp.storage.labels import (
    ELLIPSIS,
    FORMATS,
    code128_svg,
    initials_of,
    label_format,
    qr_svg,
    shorten,
)
from labapp.users.service import create_user
from tests.conftest import DEFAULT_DEPARTMENT, PASSWORD, ApiClient
from tests.storage.conftest import make_items
from tests.web.test_pages import page_login

CLONE_7 = "pLentiCRISPRv2-sgRNA-BRCA1-clone7"
CLONE_8 = "pLentiCRISPRv2-sgRNA-BRCA1-clone8"


@pytest.mark.parametrize(("text", "limit", "expected"), [
    (CLONE_7, 19, "pLentiCRI…A1-clone7"),
    (CLONE_7, 20, "pLentiCRI…CA1-clone7"),
    (CLONE_7, len(CLONE_7), CLONE_7),
    ("Serum", 5, "Serum"),
    ("Serum", 99, "Serum"),
    ("Serum 12", 4, "S…12"),
    ("Serum 12", 2, "…2"),
    ("Serum 12", 1, "…"),
    ("", 3, ""),
])
def test_shorten_keeps_the_start_and_the_end(text: str, limit: int, expected: str) -> None:
    assert shorten(text, limit) == expected
    assert len(shorten(text, limit)) <= limit


def test_shortened_names_of_a_series_stay_apart() -> None:
    for limit in range(5, len(CLONE_7)):
        seven, eight = shorten(CLONE_7, limit), shorten(CLONE_8, limit)
        assert seven != eight and seven.endswith("7") and eight.endswith("8")
        assert seven.count(ELLIPSIS) == 1 and seven.startswith(CLONE_7[:(limit - 1) // 2])


def test_shorten_refuses_a_limit_below_one() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        shorten(CLONE_7, 0)


@pytest.mark.parametrize(("name", "expected"), [
    ("Carol Chemist", "CC"), ("Jean-Luc Picard", "JLP"), ("  ada   lovelace ", "AL"),
    ("Émile Zola", "ÉZ"), ("R2 D2", "RD"), ("42", ""), ("", ""), (None, ""),
])
def test_initials_of_a_full_name(name: str | None, expected: str) -> None:
    assert initials_of(name) == expected


def test_formats_default_to_the_sheet_and_refuse_unknown_names() -> None:
    assert label_format(None) is FORMATS["sheet"] and label_format("") is FORMATS["sheet"]
    assert label_format("roll") is FORMATS["roll"]
    with pytest.raises(InvalidInput, match="Unknown label format 'a5'"):
        label_format("a5")


def test_codes_are_drawn_scalable_so_a_long_one_shrinks_into_the_label() -> None:
    barcode = code128_svg("X" * 40)
    width_mm = float(re.search(r'width="([\d.]+)mm"', barcode)[1])
    view_box = [float(part) for part in re.search(r'viewBox="([^"]+)"', barcode)[1].split()]
    assert width_mm > 63.5 and view_box[:2] == [0, 0]
    assert view_box[2] == pytest.approx(width_mm * 96 / 25.4, abs=0.01)
    assert re.match(r'<svg [^>]*width="57" height="57"[^>]* viewBox="0 0 57.000 57.000"',
                    qr_svg("MB0240002"))


@pytest.fixture
def alice(app: Flask, api_as: Callable[..., ApiClient]) -> ApiClient:
    """Alice Adams, who chose no initials."""
    with app.app_context(), transaction():
        create_user(username="alice", name="Alice Adams", department_id=DEFAULT_DEPARTMENT,
                    password=PASSWORD, created_by="admin")
        create_user(username="dora", name="Dora Dent", initials="DoD",
                    department_id=DEFAULT_DEPARTMENT, password=PASSWORD, created_by="admin")
        create_user(username="r2d2", name="42", department_id=DEFAULT_DEPARTMENT,
                    password=PASSWORD, created_by="admin")
    return api_as("alice")


@pytest.fixture
def browser(client: FlaskClient, alice: ApiClient) -> FlaskClient:
    assert page_login(client, "alice").status_code == 303
    return client


def sheet(client: FlaskClient, *codes: str, status: int = 200, **query: str) -> str:
    response = client.get("/storage/labels", query_string={"ids": "\n".join(codes), **query})
    assert response.status_code == status
    return response.get_data(as_text=True)


def labelled(page: str) -> list[str]:
    """The entity ids of the labels of a page, in order."""
    return re.findall(r'data-label="([^"]+)"', page)


def texts(page: str, css_class: str) -> list[str]:
    return re.findall(rf'class="{css_class}"[^>]*>([^<]*)<', page)


def test_similar_long_names_print_distinct_labels(browser: FlaskClient,
                                                  alice: ApiClient) -> None:
    seven, = make_items(alice, "Sample", 1, name=CLONE_7)
    eight, = make_items(alice, "Sample", 1, name=CLONE_8)
    page = sheet(browser, seven, eight)
    names = texts(page, "label-name")
    assert labelled(page) == [seven, eight]
    assert names == ["pLentiCR…A1-clone7", "pLentiCR…A1-clone8"] and names[0] != names[1]
    assert f'title="{CLONE_7}"' in page


def test_scanned_barcodes_and_ids_both_find_labels(browser: FlaskClient,
                                                   alice: ApiClient) -> None:
    tube, = make_items(alice, "Sample", 1, barcode="MB0240002")
    plate, = make_items(alice, "Plate", 1)
    # A barcode that reads like another entity's id: the barcode wins, as in bench mode.
    box, = make_items(alice, "Location", 1, barcode=plate)
    page = sheet(browser, "MB0240002", plate, tube, box)
    assert labelled(page) == [tube, box]  # tube named twice: one label
    assert "No label for" not in page
    assert texts(page, "label-code") == ["MB0240002", plate]


def test_unknown_hidden_and_unlabelled_codes_are_listed_as_skipped(
        browser: FlaskClient, alice: ApiClient, admin: ApiClient,
        department: Callable[..., str]) -> None:
    elsewhere = department("Elsewhere")
    hidden, = make_items(admin, "Sample", 1, barcode="HID-1", departmentID=elsewhere)
    experiment, = make_items(alice, "Experiment", 1, barcode="EXP-BC")
    tube, = make_items(alice, "Sample", 1)
    page = sheet(browser, "HID-1", hidden, "EXP-BC", "NOPE", tube)
    assert labelled(page) == [tube]
    assert f"No label for: HID-1, {hidden}, EXP-BC, NOPE" in page
    assert experiment not in page.split('id="label-sheet"')[1]


def test_labels_carry_the_code_text_the_date_and_the_owner(browser: FlaskClient,
                                                           alice: ApiClient) -> None:
    mine, = make_items(alice, "Sample", 1, barcode="BC-7")
    doras, = make_items(alice, "Sample", 1, userID="dora")
    droids, = make_items(alice, "Sample", 1, userID="r2d2")
    page = sheet(browser, mine, doras, droids)
    today = datetime.now(UTC).date().isoformat()
    assert texts(page, "label-code") == ["BC-7", doras, droids]
    assert texts(page, "label-date") == [today] * 3
    assert texts(page, "label-owner") == ["AA", "DoD", "r2d2"]
    assert texts(page, "label-kind") == [f"Sample {mine}", f"Sample {doras}",
                                         f"Sample {droids}"]
    label = page.split('id="label-sheet"')[1]
    assert label.count("<svg") == 6 and "style=" not in label


def test_the_roll_format_prints_one_label_per_entity_without_the_qr_code(
        browser: FlaskClient, alice: ApiClient) -> None:
    seven, eight = make_items(alice, "Sample", 2, name=CLONE_7)
    page = sheet(browser, seven, eight, format="roll")
    label = page.split('id="label-sheet"')[1]
    assert 'class="label-sheet label-format-roll"' in page and labelled(page) == [seven, eight]
    assert label.count("<svg") == 2 and "label-qr" not in label
    assert texts(page, "label-name") == [shorten(CLONE_7, FORMATS["roll"].name_chars)] * 2
    assert '<option value="roll" selected>' in page


def test_an_unknown_format_is_a_400_page_that_says_which_exist(browser: FlaskClient,
                                                              alice: ApiClient) -> None:
    tube, = make_items(alice, "Sample", 1)
    page = sheet(browser, tube, format="a5", status=400)
    assert "Unknown label format &#39;a5&#39;: choose &#39;sheet&#39; or &#39;roll&#39;." in page
    assert "data-label" not in page
