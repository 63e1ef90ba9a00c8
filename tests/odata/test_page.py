"""The Data feeds page through the test client: who may open it, the preview's row-level
security, and the token button (the browser test is ``tests/browser/test_data_feeds.py``)."""
from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient

from labapp.query.dbviews import BUILT_IN_VIEWS as VIEWS
from tests.conftest import ApiClient, basic_header, csrf_of
from tests.query.lab import qv


def test_anonymous_visitors_are_sent_to_the_login(client: FlaskClient) -> None:
    for url in ("/feeds", "/feeds/Sample/preview"):
        response = client.get(url)
        assert response.status_code == 302 and "/login" in response.headers["Location"]
    assert client.post("/feeds/pat").status_code in (302, 403)


def test_the_page_lists_every_view_with_its_feed_url(api_as: Any, make_user: Any) -> None:
    make_user("qv-page")
    page = api_as("qv-page", "cookie").get("/feeds")
    assert page.status_code == 200 and page.mimetype == "text/html"
    html = page.get_data(as_text=True)
    for name in VIEWS:
        assert f'value="http://localhost/odata/{name}"' in html
    assert "dateTaken" in html and "DateTimeOffset" in html


def test_the_preview_shows_only_readable_rows(api_as: Any, bob: ApiClient,
                                              lab: dict[str, Any]) -> None:
    browser = api_as("qv-bob", "cookie")
    html = browser.get("/feeds/Sample/preview", headers={"HX-Request": "true"}) \
        .get_data(as_text=True)
    assert qv("SAMB") in html and qv("SAM1") not in html
    assert "<html" not in html  # the block alone
    empty = browser.get("/feeds/Experiment/preview", headers={"HX-Request": "true"})
    assert 'id="preview-empty-Experiment"' in empty.get_data(as_text=True)
    assert browser.get("/feeds/Nope/preview").status_code == 404


def test_a_plain_request_for_a_preview_goes_to_its_view_on_the_page(api_as: Any,
                                                                    make_user: Any) -> None:
    make_user("qv-plain")
    browser = api_as("qv-plain", "cookie")
    plain = browser.get("/feeds/Sample/preview")
    assert plain.status_code == 303 and plain.headers["Location"] == "/feeds#feed-Sample"
    assert "HX-Request" in plain.headers["Vary"]
    assert browser.get("/feeds/Nope/preview").status_code == 404


def test_the_token_button_makes_a_working_pat(app: Any, api_as: Any, make_user: Any) -> None:
    make_user("qv-bi")
    browser = api_as("qv-bi", "cookie")
    assert browser.client.post("/feeds/pat", headers={"HX-Request": "true"}).status_code == 403
    answer = browser.client.post("/feeds/pat", headers={"HX-Request": "true",
                                                        "X-CSRF-Token": csrf_of(browser.client)})
    assert answer.status_code == 201
    html = answer.get_data(as_text=True)
    value = html.split('id="feed-pat-value">')[1].split("<")[0]
    assert value.startswith("PAT")
    feed = app.test_client().get("/odata/Sample", headers=basic_header("qv-bi", value))
    assert feed.status_code == 200


def test_the_token_form_without_htmx_answers_the_whole_page(api_as: Any,
                                                            make_user: Any) -> None:
    make_user("qv-nojs")
    browser = api_as("qv-nojs", "cookie")
    answer = browser.client.post("/feeds/pat", data={"csrf_token": csrf_of(browser.client)})
    assert answer.status_code == 201
    html = answer.get_data(as_text=True)
    assert "<html" in html and 'id="feed-pat-value">PAT' in html
    for name in VIEWS:  # the page around the token, as GET /feeds shows it
        assert f'value="http://localhost/odata/{name}"' in html
    assert "<code>qv-nojs</code>" in html
