"""Labels (issues 19 and 32): names made printable and shortened so that the labels of one
page stay apart, owners' initials, the two formats, standard QR codes, and the labels page
asked for by scanned barcodes or ids, among what the caller may see."""
from __future__ import annotations

import html
import re
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
import segno
from flask import Flask
from flask.testing import FlaskClient

from labapp.db import transaction
from labapp.errors import InvalidInput
from labapp.storage.label_names import ELLIPSIS, distinct, printable, shorten, width
from labapp.storage.labels import (
    FORMATS,
    code128_carries,
    code128_svg,
    initials_of,
    label_format,
    qr_svg,
)
from labapp.users.service import create_user
from tests.conftest import DEFAULT_DEPARTMENT, PASSWORD, ApiClient
from tests.helpers.pages import page_login
from tests.storage.conftest import make_items

CLONE_7 = "pLentiCRISPRv2-sgRNA-BRCA1-clone7"
CLONE_8 = "pLentiCRISPRv2-sgRNA-BRCA1-clone8"
SHEET = FORMATS["sheet"].name_columns
VISIT_17 = "Cohort Alpha visit 3, P-0017, plasma aliquot 1 of 4, left freezer"
VISIT_18 = "Cohort Alpha visit 3, P-0018, plasma aliquot 1 of 4, left freezer"
SCIENTIST = "\U0001f469\u200d\U0001f52c"  # woman, joiner, microscope: one picture
THUMB = "\U0001f44d\U0001f3fd"  # a thumb and its skin tone


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


@pytest.mark.parametrize(("text", "columns"), [
    ("P-0017", 6), ("試料十七", 8), ("🧪 tube", 7), (SCIENTIST, 4), ("e\u0301te\u0301", 3),
    ("عينة", 4),
])
def test_widths_count_wide_characters_twice_and_marks_not_at_all(text: str,
                                                                 columns: int) -> None:
    assert width(text) == columns


def test_shorten_counts_columns_and_never_splits_a_character_from_its_marks() -> None:
    wide = "試料" * 10 + "十七"
    assert shorten(wide, 10) == "試料…十七" and width(shorten(wide, 10)) <= 10
    for name in (SCIENTIST * 12, THUMB * 12, "e\u0301" * 30, "x" + SCIENTIST * 12 + "y"):
        for limit in range(1, 30):
            short = shorten(name, limit)
            assert width(short) <= limit
            head, _, tail = short.partition(ELLIPSIS)
            for part in (head, tail):
                assert not part.startswith(("\u200d", "\u0301", "\U0001f3fd", "\U0001f52c"))
                assert not part.endswith("\u200d")


@pytest.mark.parametrize(("name", "expected"), [
    ("Tube\x01\x07 7\tA\u202eevil end", "Tube 7 Aevil end"),
    ("  line\r\nbreak\u2028 and\x0bmore  ", "line break and more"),
    ("\u2067عينة\u2069 17", "عينة 17"),
    ("\x00\x1b[31m", "[31m"),
    (f"{SCIENTIST} e\u0301 \u200f", f"{SCIENTIST} e\u0301 \u200f"),  # marks and RLM stay
])
def test_printable_drops_controls_and_reordering(name: str, expected: str) -> None:
    assert printable(name) == expected


def test_names_alike_up_to_their_end_print_differently() -> None:
    stem = "Cohort-Alpha plasma P-0017" * 2 + "Cohort-Alpha plasma P-00"
    seventeen, eighteen = distinct([stem + "17", stem + "18"], SHEET)
    assert seventeen != eighteen and width(seventeen) <= SHEET
    assert seventeen.endswith("P-0017") and eighteen.endswith("P-0018")


def test_names_that_differ_in_the_middle_show_where() -> None:
    assert shorten(VISIT_17, SHEET) == shorten(VISIT_18, SHEET)  # start and end alike
    seventeen, eighteen, again = distinct([VISIT_17, VISIT_18, VISIT_17], SHEET)
    assert (seventeen, eighteen) == ("Cohort Alph…P-0017,…left freezer",
                                     "Cohort Alph…P-0018,…left freezer")
    assert again == seventeen  # equal names print equally
    roll = FORMATS["roll"].name_columns
    assert distinct([VISIT_17, VISIT_18], roll) == ["Cohort…P-0017,…freezer",
                                                    "Cohort…P-0018,…freezer"]


def test_a_page_of_names_alike_in_several_places_prints_them_all_apart() -> None:
    stem = "Project Nightingale liver biopsy {} lobe {} section, frozen"
    names = [stem.format(lobe, section) for lobe in ("left", "right", "caudal")
             for section in ("A", "B", "C", "D")]
    names += [name.replace("frozen", "fixed") for name in names]
    for limit in (FORMATS["roll"].name_columns, SHEET):
        printed = distinct(names, limit)
        assert len(set(printed)) == len(names)
        assert all(width(text) <= limit for text in printed)
    assert distinct(names, FORMATS["roll"].name_columns)[:2] == [
        "Project…left…A…, frozen", "Project…left…B…, frozen"]


def test_distinct_handles_ten_thousand_characters() -> None:
    """How fast is measured in ``bench/guards.py``."""
    names = ["x" * 9_999 + str(digit) for digit in range(10)] + ["y" * 10_000] * 2
    names += ["z" * 5_000 + str(digit) + "z" * 4_999 for digit in range(10)]
    names += [f"w{number}" + "w" * 10_000 for number in range(278)]  # a page of 300 labels
    printed = distinct(names, SHEET)
    assert len(set(printed)) == len(set(names))
    assert all(width(text) <= SHEET for text in printed)


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
    # 21 modules and a quiet zone of 4 on each side, 3 units a module: a standard QR code of
    # version 1 (a Micro QR code has at most 17 modules and a quiet zone of 2).
    assert re.match(r'<svg [^>]*width="87" height="87"[^>]* viewBox="0 0 87.000 87.000"',
                    qr_svg("MB0240002"))
    assert segno.make("MB0240002").is_micro  # what labels carried before issue 32


@pytest.mark.parametrize(("code", "carried"), [
    ("MB0240002", True), ("Tube 7 / A-1", True), ("~!@#$%^&*()", True), ("", False),
    ("Ü-17", False), ("🧪1", False), ("A\tB", False), ("A\x7fB", False),
])
def test_code128_carries_printable_ascii_only(code: str, carried: bool) -> None:
    assert code128_carries(code) is carried


@pytest.mark.parametrize(("name", "expected"), [
    ("Carol Chemist", "CC"), ("Jean-Luc Picard", "JLP"), ("  ada   lovelace ", "AL"),
    ("Émile Zola", "ÉZ"), ("R2 D2", "RD"), ("42", ""), ("", ""), (None, ""),
])
def test_initials_of_a_full_name(name: str | None, expected: str) -> None:
    assert initials_of(name) == expected


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


def names_on(page: str) -> list[str]:
    """The names the labels of a page print, in order."""
    return [html.unescape(name) for name in
            re.findall(r'class="label-name"[^>]*><span dir="auto">([^<]*)</span>', page)]


def test_similar_long_names_print_distinct_labels(browser: FlaskClient,
                                                  alice: ApiClient) -> None:
    seven, = make_items(alice, "Sample", 1, name=CLONE_7)
    eight, = make_items(alice, "Sample", 1, name=CLONE_8)
    page = sheet(browser, seven, eight)
    assert labelled(page) == [seven, eight]
    assert names_on(page) == ["pLentiCRISPRv2-…RNA-BRCA1-clone7",
                              "pLentiCRISPRv2-…RNA-BRCA1-clone8"]
    assert f'title="{CLONE_7}"' in page


@pytest.mark.parametrize(("layout", "expected"), [
    ("sheet", ["Cohort-Alpha plasma P-0017", "Cohort-Alpha plasma P-0018",
               "Cohort Alph…P-0017,…left freezer", "Cohort Alph…P-0018,…left freezer",
               "Cohort Alph…P-0017,…left freezer"]),
    ("roll", ["Cohort-Alph…asma P-0017", "Cohort-Alph…asma P-0018",
              "Cohort…P-0017,…freezer", "Cohort…P-0018,…freezer", "Cohort…P-0017,…freezer"]),
])
def test_names_alike_print_apart_on_one_page(browser: FlaskClient, alice: ApiClient,
                                             layout: str, expected: list[str]) -> None:
    """The issue's pair (alike up to the end) and a pair alike but in the middle; the same
    name twice prints the same."""
    ids = [make_items(alice, "Sample", 1, name=name)[0] for name in (
        "Cohort-Alpha plasma P-0017", "Cohort-Alpha plasma P-0018", VISIT_17, VISIT_18,
        VISIT_17)]
    assert names_on(sheet(browser, *ids, format=layout)) == expected
    # Each pair apart also when it is alone on its page.
    assert names_on(sheet(browser, ids[2], ids[3], format=layout)) == expected[2:4]


def test_hostile_names_print_as_one_clean_line(browser: FlaskClient,
                                               alice: ApiClient) -> None:
    hostile = {
        "Tube\x01\x07 7\tA\u202eevil end\r\n": "Tube 7 Aevil end",
        "x" * 254 + "Z": "x" * 15 + ELLIPSIS + "x" * 15 + "Z",
        "عينة الدم رقم ١٧ من المجموعة ألفا": "عينة الدم رقم ١…من المجموعة ألفا",
        f"{SCIENTIST} plasma {THUMB} tube 9": f"{SCIENTIST} plasma {THUMB} tube 9",
        "🧪" * 40: "🧪" * 7 + ELLIPSIS + "🧪" * 8,
        "<script>alert(1)</script>": "<script>alert(1)</script>",
    }
    ids = [make_items(alice, "Sample", 1, name=name)[0] for name in hostile]
    refused = alice.post("/api/entity", json={"entities": [{"eClass": "Sample",
                                                             "name": "x" * 10_000}]})
    assert refused.status_code == 400  # names are at most 255 characters
    page = sheet(browser, *ids)
    assert names_on(page) == list(hostile.values())
    assert all(width(name) <= SHEET for name in names_on(page))
    assert "<script>alert" not in page and "\x01" not in page.split('id="label-sheet"')[1]
    label = page.split('id="label-sheet"')[1]
    assert label.count("<svg") == 2 * len(ids)


def test_a_code_code128_cannot_carry_prints_without_bars(browser: FlaskClient,
                                                         alice: ApiClient) -> None:
    odd, = make_items(alice, "Sample", 1, barcode="Ü-17 🧪")
    plain, = make_items(alice, "Sample", 1)
    page = sheet(browser, odd, plain)
    assert labelled(page) == [odd, plain] and texts(page, "label-code") == ["Ü-17 🧪", plain]
    assert [part.count("<svg") for part in page.split("data-label=")[1:]] == [1, 2]
    assert page.split("data-label=")[1].count("label-qr") == 1
    roll = sheet(browser, odd, plain, format="roll")
    assert [part.count("<svg") for part in roll.split("data-label=")[1:]] == [0, 1]


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
    assert names_on(page) == [shorten(CLONE_7, FORMATS["roll"].name_columns)] * 2
    assert '<option value="roll" selected>' in page


def test_an_unknown_format_is_a_400_page_that_says_which_exist(browser: FlaskClient,
                                                              alice: ApiClient) -> None:
    tube, = make_items(alice, "Sample", 1)
    page = sheet(browser, tube, format="a5", status=400)
    assert "Unknown label format &#39;a5&#39;: choose &#39;sheet&#39; or &#39;roll&#39;." in page
    assert "data-label" not in page
