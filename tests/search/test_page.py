"""The search page and the type-ahead through the Flask test client (the browser tests drive
them in Chromium): grouping, marking, the scan jump, modes, classes and bad terms."""
from __future__ import annotations

import pytest
from flask.testing import FlaskClient

from tests.conftest import ApiClient
from tests.entities.conftest import save

# Each test runs on every search backend of the pass (tests/search/conftest.py).
pytestmark = pytest.mark.usefixtures("search_backend")


def test_results_are_grouped_and_marked(admin: ApiClient) -> None:
    save(admin, {"eClass": "Sample", "name": "Lysate <b>raw</b>"},
         {"eClass": "Experiment", "name": "Lysate prep"})
    page = admin.get("/search", query_string={"q": "lysate"}).get_data(as_text=True)
    assert 'data-class="Sample"' in page and 'data-class="Experiment"' in page
    assert "<mark>Lysate</mark> &lt;b&gt;raw&lt;/b&gt;" in page


def test_the_htmx_request_gets_the_results_block(admin: ApiClient) -> None:
    save(admin, {"eClass": "Sample", "name": "Lysate"})
    block = admin.get("/search", query_string={"q": "Lysate", "mode": "exact"},
                      headers={"HX-Request": "true"}).get_data(as_text=True)
    assert block.lstrip().startswith("<p class=\"search-total\">1 found")
    assert "<html" not in block


def test_an_exact_match_submitted_from_the_box_opens_the_entity(admin: ApiClient) -> None:
    (sample,) = save(admin, {"eClass": "Sample", "name": "stock", "barcode": "4006381333931"})
    response = admin.get("/search", query_string={"q": "4006381333931", "go": "1"})
    assert response.status_code == 302
    assert response.headers["Location"] == f"/entities/Sample/{sample['id']}"
    # Without an exact match the results page answers.
    assert admin.get("/search", query_string={"q": "40063", "go": "1"}).status_code == 200


def test_suggestions_and_bad_terms(admin: ApiClient) -> None:
    save(admin, {"eClass": "Sample", "name": "Zebrafish"})
    block = admin.get("/search/suggest", query_string={"q": "zebra*"},
                      headers={"HX-Request": "true"}).get_data(as_text=True)
    assert "<mark>Zebrafish</mark>" in block
    page = admin.get("/search", query_string={"q": "x" * 300}).get_data(as_text=True)
    assert 'id="search-error"' in page and "256" in page


def test_a_plain_request_for_suggestions_goes_to_the_results_page(admin: ApiClient) -> None:
    """Without htmx (no JavaScript, an address opened or shared) the suggestions' address is
    the results page of its term: the list alone would be a page without a layout."""
    save(admin, {"eClass": "Sample", "name": "Zebrafish"})
    plain = admin.get("/search/suggest", query_string={"q": "zebra"})
    assert plain.status_code == 303 and plain.headers["Location"] == "/search?q=zebra"
    assert "HX-Request" in plain.headers["Vary"]
    page = admin.get(plain.headers["Location"]).get_data(as_text=True)
    assert "<html" in page and "<mark>Zebrafish</mark>" in page
    empty = admin.get("/search/suggest")
    assert empty.status_code == 303 and empty.headers["Location"] == "/search"
    block = admin.get("/search/suggest", query_string={"q": "zebra"},
                      headers={"HX-Request": "true"})
    assert block.status_code == 200 and "<html" not in block.get_data(as_text=True)


def test_visitors_are_sent_to_the_login(client: FlaskClient) -> None:
    response = client.get("/search", query_string={"q": "x"})
    assert response.status_code == 302 and "/login" in response.headers["Location"]
