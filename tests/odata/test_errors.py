"""Errors under ``/odata`` are OData JSON errors with the status of decisions §2, and nothing
of a feed is written before its options are known to be good."""
from __future__ import annotations

from typing import Any

import pytest
from flask import Flask

from tests.conftest import ApiClient, basic_header
from tests.odata.conftest import odata_error, page

FEED = "/odata/Sample"


def test_anonymous_callers_are_challenged_for_basic(client: Any) -> None:
    for url in ("/odata", "/odata/$metadata", FEED, "/odata/Nope", "/odata/Sample/$count"):
        response = client.get(url)
        odata_error(response, 401, "not_authenticated")
        assert response.headers["WWW-Authenticate"].startswith('Basic realm="labapp"')


def test_wrong_basic_credentials_are_401(client: Any, make_user: Any) -> None:
    make_user("qv-wrong")
    response = client.get(FEED, headers=basic_header("qv-wrong", "not the password"))
    odata_error(response, 401, "invalid_credentials")
    assert response.headers["WWW-Authenticate"].startswith("Basic")


def test_an_unknown_view_is_404(admin: ApiClient) -> None:
    odata_error(admin.get("/odata/Nope"), 404, "unknown_view")
    odata_error(admin.get("/odata/Nope/$count"), 404, "unknown_view")
    odata_error(admin.get("/odata/Sample/more/path"), 404, "not_found")


def test_a_bad_filter_names_the_token_and_its_position(admin: ApiClient) -> None:
    message = odata_error(admin.get(FEED, query_string={"$filter": "name eq 'x' and and"}),
                          400, "invalid_filter", "$filter")
    assert message == "Unexpected token 'and' at position 16"
    message = odata_error(admin.get(FEED, query_string={"$filter": "nope eq 1"}),
                          400, "invalid_filter", "$filter")
    assert "nope" in message and "position 0" in message


@pytest.mark.parametrize(("query", "code", "target"), [
    ({"$select": "id,nope"}, "invalid_select", "$select"),
    ({"$select": "attributes/ph"}, "invalid_select", "$select"),
    ({"$orderby": "nope"}, "invalid_orderby", "$orderby"),
    ({"$orderby": "name sideways"}, "invalid_orderby", "$orderby"),
    ({"$orderby": "attributes"}, "invalid_orderby", "$orderby"),
    ({"$top": "-1"}, "invalid_paging", "$top"),
    ({"$top": "ten"}, "invalid_paging", "$top"),
    ({"$skip": "-5"}, "invalid_paging", "$skip"),
    ({"$count": "maybe"}, "invalid_option", "$count"),
    ({"$expand": "Step"}, "unsupported_option", "$expand"),
    ({"$apply": "groupby((status))"}, "unsupported_option", "$apply"),
    ({"$format": "xml"}, "unsupported_format", "$format"),
    ({"$skiptoken": "garbage!"}, "invalid_skiptoken", "$skiptoken"),
])
def test_bad_options_are_400_naming_the_option(admin: ApiClient, query: dict[str, str],
                                               code: str, target: str) -> None:
    odata_error(admin.get(FEED, query_string=query), 400, code, target)


def test_custom_options_and_json_format_are_accepted(admin: ApiClient) -> None:
    page(admin, FEED, **{"$format": "json", "x-custom": "1", "$TOP": "1"})
    page(admin, FEED, **{"$format": "application/json;odata.metadata=minimal"})


def test_a_token_of_another_order_is_refused(small_pages: Any, admin: ApiClient,
                                             lab: dict[str, Any]) -> None:
    small_pages(1)
    link = page(admin, FEED, **{"$orderby": "name"})["@odata.nextLink"]
    token = link.partition("$skiptoken=")[2]
    odata_error(admin.get(FEED, query_string={"$skiptoken": token}), 400,
                "invalid_skiptoken", "$skiptoken")
    odata_error(admin.get("/odata/Experiment", query_string={"$orderby": "name",
                                                             "$skiptoken": token}),
                400, "invalid_skiptoken", "$skiptoken")


def test_other_methods_are_405(admin: ApiClient) -> None:
    odata_error(admin.post(FEED, json={}), 405, "method_not_allowed")


def test_every_odata_response_carries_the_version(app: Flask, admin: ApiClient) -> None:
    for url in ("/odata", "/odata/$metadata", FEED, "/odata/Sample/$count"):
        assert admin.get(url).headers["OData-Version"] == "4.0"


def test_the_api_keeps_problem_json(client: Any) -> None:
    """The OData renderer covers /odata only: /api and /odatav3 stay problem JSON."""
    for url in ("/api/entity/Sample", "/odatav3"):
        response = client.get(url)
        assert response.mimetype == "application/problem+json", url
