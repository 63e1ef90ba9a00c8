"""What a lab member reads on the entity pages, through the test client: references by name
(never the name of an entity the reader may not see), fields labelled in words, numbers with
their unit and no float noise, moments as ``<time>`` with an ISO fallback, empty fields set
apart, and every name of a page looked up in one query. The home page links only what
exists. (How Chromium shows the moments is in ``tests/browser/test_entity_display.py``.)"""
from __future__ import annotations

import re
from typing import Any

import pytest
from flask.testing import FlaskClient

from labapp.entities.display import number_text
from tests.conftest import ADMIN_PASSWORD, ApiClient
from tests.helpers.pages import section
from tests.helpers.statements import statements
from tests.web.conftest import html_of, save

NAME_LOOKUP = re.compile(r"SELECT entity\.id, entity\.eclass, entity\.name\s+FROM entity")


def field(html: str, label: str) -> str:
    """The ``<dd>`` of the field labelled ``label`` on a detail page."""
    match = re.search(rf"<dt>{re.escape(label)}</dt>\s*<dd>(.*?)</dd>", html, re.S)
    assert match, f"no field {label!r}"
    return match.group(1)


def labels(html: str) -> list[str]:
    return re.findall(r"<dt>([^<]+)</dt>", section(html, "fields"))


@pytest.fixture
def measured(api: ApiClient) -> dict[str, Any]:
    """An experiment and a sample of it with an amount, a concentration and a date."""
    experiment, sample = save(
        api, {"eClass": "Experiment", "id": "#exp", "name": "Growth curve"},
        {"eClass": "Sample", "name": "Broth", "experimentID": "#exp",
         "amount": 38.14494730136748, "unit": "mL", "concentration": 0.000123456,
         "concentrationUnit": "mol/L", "dateTaken": "2024-03-05"})
    return {"experiment": experiment, "sample": sample}


def test_references_show_the_name_linked_with_the_id_beside(signed_in, measured):
    experiment, sample = measured["experiment"], measured["sample"]
    html = html_of(signed_in.get(f"/entities/Sample/{sample['id']}"))
    assert field(html, "Experiment") == (
        f'<a href="/entities/Experiment/{experiment["id"]}">Growth curve</a> '
        f'<span class="muted ref-id">{experiment["id"]}</span>')
    assert field(html, "Department") == (
        '<a href="/entities/Department/DEP00001">Administration</a> '
        '<span class="muted ref-id">DEP00001</span>')
    assert field(html, "Created by") == (
        '<a href="/entities/User/alice">Alice Liddell</a> <span class="muted ref-id">alice</span>')


def test_fields_are_labelled_in_words_the_lab_s_own_first(signed_in, measured):
    html = html_of(signed_in.get(f"/entities/Sample/{measured['sample']['id']}"))
    shown = labels(html)
    assert "Experiment" in shown and "Department" in shown and "Created" in shown
    assert not [label for label in shown if label.endswith((" ID", "(UTC)"))]
    assert shown.index("Amount") < shown.index("Created by") < shown.index("Version")


def test_an_invisible_reference_shows_its_id_never_its_name(api_as, signed_in, author,
                                                             other_department):
    admin = api_as("admin", password=ADMIN_PASSWORD)
    secret, sample = save(
        admin, {"eClass": "Experiment", "id": "#secret", "name": "Secret plan",
                "departmentID": other_department},
        {"eClass": "Sample", "name": "Visible broth", "experimentID": "#secret",
         "departmentID": "DEP00001"})
    html = html_of(signed_in.get(f"/entities/Sample/{sample['id']}"))
    assert field(html, "Experiment") == secret["id"]
    assert "Secret plan" not in html
    table = html_of(signed_in.get("/entities/Sample", query_string={"columns": "experimentID"}))
    assert re.search(rf'<td( class="fit-\d+")?>{secret["id"]}</td>', table)
    assert "Secret plan" not in table


def test_numbers_show_their_unit_and_no_float_noise(signed_in, measured):
    html = html_of(signed_in.get(f"/entities/Sample/{measured['sample']['id']}"))
    assert field(html, "Amount") == "38.1449 mL"
    assert field(html, "Concentration") == "0.0001235 mol/L"
    assert "Unit" not in labels(html) and "Concentration unit" not in labels(html)
    assert "14494730136748" not in section(html, "fields"), "the audit trail keeps it exact"


@pytest.mark.parametrize(("value", "shown"), [
    (38.14494730136748, "38.1449"), (0.1 + 0.2, "0.3"), (25.0, "25"), (-2.5, "-2.5"),
    (0.000123456, "0.0001235"), (1234567.891, "1234567.891"), (0.0, "0"),
])
def test_number_precision(value, shown):
    assert number_text(value) == shown


def test_a_unit_without_its_number_is_its_own_field(signed_in, api):
    (sample,) = save(api, {"eClass": "Sample", "name": "Empty tube", "unit": "mL"})
    html = html_of(signed_in.get(f"/entities/Sample/{sample['id']}"))
    assert field(html, "Unit") == "mL"
    assert "Amount" in section(html, "empty-fields")


def test_moments_are_time_elements_with_an_iso_fallback(signed_in, api, measured):
    html = html_of(signed_in.get(f"/entities/Sample/{measured['sample']['id']}"))
    assert field(html, "Date taken") == '<time datetime="2024-03-05">2024-03-05</time>'
    created = re.fullmatch(r'<time datetime="([0-9T:-]+Z)">\1</time>', field(html, "Created"))
    assert created, field(html, "Created")
    assert re.search(r'<td rowspan="\d+"><time datetime="[0-9T:-]+Z">', section(html, "audit"))
    (run,) = save(api, {"eClass": "Fermentation", "name": "Run 1",
                        "startTime": "2024-03-06T04:30:00+01:00"})
    run_html = html_of(signed_in.get(f"/entities/Fermentation/{run['id']}"))
    assert field(run_html, "Start time") == (
        '<time datetime="2024-03-06T03:30:00Z">2024-03-06T03:30:00Z</time>')


def test_empty_fields_are_set_apart(signed_in, measured):
    html = html_of(signed_in.get(f"/entities/Sample/{measured['sample']['id']}"))
    empty = section(html, "empty-fields")
    assert re.search(r"<summary[^>]*>\d+ empty fields</summary>", empty)
    for label in ("Barcode", "Description", "Plate", "Location"):
        assert label in empty and label not in labels(html)


def test_every_name_of_a_detail_page_is_looked_up_in_one_query(app, signed_in, api, measured):
    sample = measured["sample"]
    save(api, {"eClass": "Note", "name": "n", "subjectID": sample["id"], "content": "ok"})
    with statements(app) as seen:
        html = html_of(signed_in.get(f"/entities/Sample/{sample['id']}"))
    assert "Growth curve" in html and "Alice Liddell" in html
    assert len([statement for statement in seen if NAME_LOOKUP.search(statement)]) == 1


def test_tables_show_names_units_and_moments_with_one_lookup(app, signed_in, api, measured):
    experiment = measured["experiment"]
    save(api, *({"eClass": "Sample", "name": f"Tube {number}", "experimentID": experiment["id"],
                 "amount": 1 / 3, "unit": "µL"} for number in range(3)))
    with statements(app) as seen:
        response = signed_in.get("/entities/Sample", query_string={
            "columns": "name,experimentID,amount,modifiedUtc", "orderby": "name"})
    html = html_of(response)
    assert len([statement for statement in seen if NAME_LOOKUP.search(statement)]) == 1
    rows = re.findall(r"<tr>(.*?)</tr>", section(html, "entity-table").split("<tbody>")[1], re.S)
    assert len(rows) == 4
    cells = re.findall(r"<td[^>]*>(.*?)</td>", rows[1], re.S)
    assert cells[1:4] == [
        "Tube 0",
        f'<a href="/entities/Experiment/{experiment["id"]}">Growth curve</a> '
        f'<span class="muted ref-id">{experiment["id"]}</span>',
        '0.3333 µL <span class="mark mark-low">low</span>']  # below 10 µL (LABAPP_LOW_AMOUNT)
    assert re.fullmatch(r'<time datetime="([0-9T:-]+Z)">\1</time>', cells[4])
    assert re.search(r'<th scope="col" class="(fit-\d+ )?num">', html), "numbers align right"


def test_home_and_navigation_link_only_what_exists(signed_in: FlaskClient):
    html = html_of(signed_in.get("/"))
    assert "coming soon" not in html and 'aria-disabled' not in html
    for area in ("Search", "Dashboards"):
        assert f">{area}<" not in html
    hrefs = re.findall(r'<a href="([^"]+)"', html)
    assert "#" not in hrefs


def test_the_audit_trail_keeps_exact_numbers(signed_in, api, measured):
    sample = measured["sample"]
    save(api, {"eClass": "Sample", "id": sample["id"], "amount": 38.14494730136749,
               "version": sample["version"]}, status=200)
    audit = section(html_of(signed_in.get(f"/entities/Sample/{sample['id']}")), "audit")
    assert "<del>38.14494730136748 mL</del>" in audit and "<ins>38.14494730136749 mL</ins>" in audit
