"""``/odata``: the service document, ``$metadata`` and the feeds with their query options
(the lab of ``tests/query/lab.py``: department A owns everything but sample SAMB)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest
from flask import Flask
from sqlalchemy import text

from labapp.access.grant_sets import actor_for
from labapp.db import db
from labapp.model import User
from labapp.odata.feed import open_feed
from labapp.odata.metadata import EDM, EDMX, edm_type
from labapp.odata.options import FeedOptions
from labapp.query import paging
from labapp.query.dbviews import BUILT_IN_VIEWS as VIEWS
from tests.conftest import AUTH_METHODS, BACKEND, ApiClient
from tests.odata.conftest import all_pages, page
from tests.query.lab import ids, qv

OURS = "startswith(id,'QV-')"
EDM_OF_VALUE = {str: {"Edm.String", "Edm.Date", "Edm.DateTimeOffset"},
                int: {"Edm.Int64"}, float: {"Edm.Double"}, bool: {"Edm.Boolean"}}


def feed_ids(api: ApiClient, name: str, **query: Any) -> list[str]:
    return ids(page(api, f"/odata/{name}", **{"$filter": OURS, **query})["value"])


def metadata_types(api: ApiClient) -> dict[str, dict[str, str]]:
    """``{EntityType: {property: EDM type}}`` of ``$metadata``, checking its structure."""
    response = api.get("/odata/$metadata")
    assert response.status_code == 200
    assert response.mimetype == "application/xml"
    assert response.headers["OData-Version"] == "4.0"
    root = ET.fromstring(response.data)
    assert root.tag == f"{{{EDMX}}}Edmx" and root.get("Version") == "4.0"
    schema = root.find(f"{{{EDMX}}}DataServices/{{{EDM}}}Schema")
    types = {}
    for entity_type in schema.findall(f"{{{EDM}}}EntityType"):
        refs = entity_type.findall(f"{{{EDM}}}Key/{{{EDM}}}PropertyRef")
        keys = [ref.get("Name") for ref in refs]
        assert keys == ["id"], entity_type.get("Name")
        types[entity_type.get("Name")] = {prop.get("Name"): prop.get("Type") for prop in
                                          entity_type.findall(f"{{{EDM}}}Property")}
    sets = {entity_set.get("Name"): entity_set.get("EntityType") for entity_set in
            schema.findall(f"{{{EDM}}}EntityContainer/{{{EDM}}}EntitySet")}
    assert sets == {name: f"labapp.{name}" for name in types}
    return types


def test_the_service_document_lists_every_view_and_nothing_else(admin: ApiClient) -> None:
    body = page(admin, "/odata")
    assert body["@odata.context"] == "http://localhost/odata/$metadata"
    assert body["value"] == [{"name": name, "kind": "EntitySet", "url": name} for name in VIEWS]
    assert page(admin, "/odata/") == body


def test_metadata_types_every_column_of_every_view(admin: ApiClient) -> None:
    types = metadata_types(admin)
    assert list(types) == list(VIEWS)
    for name, spec in VIEWS.items():
        assert list(types[name]) == [column.name for column in spec.columns]
    assert types["Sample"]["amount"] == "Edm.Double"
    assert types["Sample"]["version"] == "Edm.Int64"
    assert types["Sample"]["dateTaken"] == "Edm.Date"
    assert types["Sample"]["createdUtc"] == "Edm.DateTimeOffset"
    assert types["User"]["isActive"] == "Edm.Boolean"
    assert types["Sample"]["attributes"] == "Edm.String"
    assert types["ExperimentProgress"]["stepsCompleted"] == "Edm.Int64"


@pytest.mark.parametrize("name", list(VIEWS))
def test_rows_carry_exactly_the_typed_properties_of_metadata(
        admin: ApiClient, lab: dict[str, Any], name: str) -> None:
    types = metadata_types(admin)[name]
    body = page(admin, f"/odata/{name}")
    assert body["@odata.context"] == f"/odata/$metadata#{name}"
    assert "@odata.nextLink" not in body and "@odata.count" not in body
    for row in body["value"]:
        assert list(row) == list(types)
        for prop, value in row.items():
            if value is not None:
                assert types[prop] in EDM_OF_VALUE[type(value)], (prop, value)


def test_values_are_written_as_odata_json(admin: ApiClient, lab: dict[str, Any]) -> None:
    row = page(admin, "/odata/Sample", **{"$filter": f"id eq '{qv('SAM1')}'"})["value"][0]
    assert row["dateTaken"] == "2026-01-31"
    assert row["createdUtc"].endswith("Z") and "T" in row["createdUtc"]
    assert row["amount"] == 1.5
    assert json.loads(row["attributes"]) == {"batch": "B1", "ph": 7.5}  # JSON text


def test_filter_select_orderby_top_skip_and_count(admin: ApiClient,
                                                  lab: dict[str, Any]) -> None:
    assert feed_ids(admin, "Sample") == [qv("SAM1"), qv("SAM2"), qv("SAM3"), qv("SAMB")]
    assert feed_ids(admin, "Sample", **{"$orderby": "id desc"}) == [
        qv("SAMB"), qv("SAM3"), qv("SAM2"), qv("SAM1")]
    assert feed_ids(admin, "Sample", **{"$orderby": "amount desc,id"}) == [
        qv("SAM2"), qv("SAMB"), qv("SAM3"), qv("SAM1")]  # missing amounts sort as largest
    body = page(admin, "/odata/Sample", **{"$filter": f"{OURS} and amount gt 1",
                                           "$select": "ID,Amount", "$count": "true"})
    assert body == {"@odata.context": "/odata/$metadata#Sample", "@odata.count": 2,
                    "value": [{"id": qv("SAM1"), "amount": 1.5},
                              {"id": qv("SAM3"), "amount": 10.0}]}
    body = page(admin, "/odata/Sample", **{"$filter": OURS, "$top": "2", "$skip": "1",
                                           "$count": "true", "$select": "id"})
    assert body["@odata.count"] == 4 and "@odata.nextLink" not in body
    assert ids(body["value"]) == [qv("SAM2"), qv("SAM3")]
    assert feed_ids(admin, "Sample", **{"$top": "0"}) == []
    assert feed_ids(admin, "Sample", **{"$skip": "10"}) == []


def test_the_filter_dialect_and_its_extensions(admin: ApiClient, lab: dict[str, Any]) -> None:
    assert feed_ids(admin, "Sample", **{"$filter": f"{OURS} and attributes/batch eq 'B2'"}) \
        == [qv("SAM2")]
    assert feed_ids(admin, "Sample", **{"$filter": f"{OURS} and amount isnull"}) == [
        qv("SAM2"), qv("SAMB")]
    assert feed_ids(admin, "SampleOverview",
                    **{"$filter": f"{OURS} and locationPath eq 'Lab / Freezer'"}) == [
        qv("SAM1"), qv("SAM2"), qv("SAM3")]
    assert feed_ids(admin, "Sample", **{"$filter": f"{OURS} and userID template '!me'"}) \
        == [qv("SAM1"), qv("SAM2"), qv("SAM3"), qv("SAMB")]


def test_view_names_are_case_insensitive(admin: ApiClient, lab: dict[str, Any]) -> None:
    body = page(admin, "/odata/sampleoverview", **{"$filter": OURS})
    assert body["@odata.context"] == "/odata/$metadata#SampleOverview"
    assert len(body["value"]) == 4


def test_the_count_path(admin: ApiClient, bob: ApiClient, lab: dict[str, Any]) -> None:
    response = admin.get("/odata/Sample/$count", query_string={"$filter": OURS})
    assert response.status_code == 200 and response.mimetype == "text/plain"
    assert response.data == b"4"
    assert bob.get("/odata/Sample/$count", query_string={"$filter": OURS}).data == b"1"


# ----------------------------------------------------------------------------- paging

ORDERS = ["", "name", "name desc", "amount desc", "amount,name desc", "dateTaken desc,id",
          "attributes/ph", "experimentName desc", "locationPath,well desc"]


@pytest.mark.parametrize("orderby", ORDERS)
def test_keyset_pages_give_the_rows_of_one_unpaged_read(small_pages: Any, admin: ApiClient,
                                                        lab: dict[str, Any],
                                                        orderby: str) -> None:
    view = "Sample" if "experimentName" not in orderby and "locationPath" not in orderby \
        else "SampleOverview"
    query = {"$filter": OURS, "$select": "id", **({"$orderby": orderby} if orderby else {})}
    whole = page(admin, f"/odata/{view}", **query)["value"]
    small_pages(1)
    rows, pages = all_pages(admin, f"/odata/{view}", **query)
    assert rows == whole and pages == 4


def test_next_links_keep_the_options_and_what_remains_of_top(small_pages: Any, admin: ApiClient,
                                                             lab: dict[str, Any]) -> None:
    whole = page(admin, "/odata/Sample", **{"$filter": OURS, "$select": "id,name",
                                            "$orderby": "name"})["value"]
    small_pages(2)
    query = {"$filter": OURS, "$select": "id,name", "$orderby": "name", "$count": "true",
             "$top": "3", "$skip": "1"}
    first = page(admin, "/odata/Sample", **query)
    link = first["@odata.nextLink"]
    assert link.startswith("http://localhost/odata/Sample?")
    assert "%24top=1" in link.replace("$", "%24") and "skip=" not in link.replace("skiptoken", "")
    rows, pages = all_pages(admin, "/odata/Sample", **query)
    assert rows == whole[1:4] and pages == 2
    assert first["@odata.count"] == 4 and set(first["value"][0]) == {"id", "name"}


def test_a_page_ends_without_a_link_when_nothing_follows(small_pages: Any, admin: ApiClient,
                                                         lab: dict[str, Any]) -> None:
    small_pages(4)
    assert "@odata.nextLink" not in page(admin, "/odata/Sample", **{"$filter": OURS})
    small_pages(3)
    assert "@odata.nextLink" in page(admin, "/odata/Sample", **{"$filter": OURS})


def test_rows_added_between_pages_do_not_shift_the_pages(small_pages: Any, admin: ApiClient,
                                                         lab: dict[str, Any]) -> None:
    """Keyset paging: a row inserted before the position is not read twice (OFFSET would)."""
    small_pages(2)
    first = page(admin, "/odata/Sample", **{"$filter": OURS, "$select": "id"})
    response = admin.post("/api/entity", json={"entities": [
        {"eClass": "Sample", "id": qv("SAM0"), "name": "Zero"}]})
    assert response.status_code == 201
    link = first["@odata.nextLink"].removeprefix("http://localhost")
    second = page(admin, link)
    assert ids(first["value"]) + ids(second["value"]) == [qv("SAM1"), qv("SAM2"), qv("SAM3"),
                                                          qv("SAMB")]


def test_a_page_is_streamed_in_chunks(admin: ApiClient, lab: dict[str, Any]) -> None:
    response = admin.get("/odata/Sample", buffered=False)
    assert response.is_streamed
    chunks = list(response.response)
    response.close()
    assert len(chunks) >= 3  # head, rows, tail: written as read, not built whole


# ------------------------------------------------------------------ row-level security

def test_rows_are_filtered_by_row_level_security(bob: ApiClient, lab: dict[str, Any]) -> None:
    for name in ("Sample", "SampleOverview"):
        assert feed_ids(bob, name) == [qv("SAMB")]
    for name in ("Experiment", "Step", "Location", "Plate", "StepInput", "StorageOverview",
                 "StepSampleInput", "ExperimentProgress"):
        assert feed_ids(bob, name) == [], name


def test_joined_values_the_caller_may_not_read_are_null(admin: ApiClient, bob: ApiClient,
                                                       lab: dict[str, Any]) -> None:
    query = {"$filter": f"id eq '{qv('SAMB')}'", "$select": "id,experimentName,stepName"}
    assert page(admin, "/odata/SampleOverview", **query)["value"] == [
        {"id": qv("SAMB"), "experimentName": "Growth curve", "stepName": "Step 2"}]
    assert page(bob, "/odata/SampleOverview", **query)["value"] == [
        {"id": qv("SAMB"), "experimentName": None, "stepName": None}]
    hidden = {"$filter": f"{OURS} and experimentName eq 'Growth curve'"}
    assert feed_ids(bob, "SampleOverview", **hidden) == []


def test_paging_never_crosses_row_level_security(small_pages: Any, bob: ApiClient,
                                                 lab: dict[str, Any]) -> None:
    small_pages(1)
    rows, pages = all_pages(bob, "/odata/Sample", **{"$filter": OURS, "$count": "true"})
    assert ids(rows) == [qv("SAMB")] and pages == 1


@pytest.mark.parametrize("method", AUTH_METHODS)
def test_every_authentication_method_reads_the_feed(
        api_as: Any, make_user: Any, lab: dict[str, Any], method: str) -> None:
    make_user("qv-feeder", department_id=lab["B"])
    api = api_as("qv-feeder", method)
    assert feed_ids(api, "Sample") == [qv("SAMB")]


def test_the_docs_list_every_view_and_column() -> None:
    """``docs/odata.md`` names every view and every column with its EDM type."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "odata.md").read_text()
    for name, spec in VIEWS.items():
        section = text.split(f"### {name}\n", 1)[1].split("\n### ", 1)[0]
        for column in spec.columns:
            assert f"`{column.name}` ({edm_type(column).removeprefix('Edm.')})" in section, \
                (name, column.name)


@pytest.mark.skipif(BACKEND != "sqlite", reason="SQLite's plan; PostgreSQL plans by statistics "
                                                "(its keyset plan is in "
                                                "bench/runs/2026-11-23-odata.md)")
def test_sqlite_walks_the_primary_key_instead_of_sorting_the_visible_rows(
        app: Flask, bob: ApiClient, lab: dict[str, Any]) -> None:
    """By id, a page reads from the keyset position and stops: no sort of every row after it."""
    with app.app_context():
        actor = actor_for(db.session.get(User, "qv-bob"), method="bearer", on_premises=True)
        for options in (FeedOptions(), FeedOptions(skiptoken=paging.encode(
                paging.fingerprint("Sample", ""), [qv("SAM1")]))):
            statement = open_feed(actor, VIEWS["Sample"], options, page_size=2).statement
            sql = str(statement.compile(db.engine, compile_kwargs={"literal_binds": True}))
            plan = [row[3] for row in db.session.execute(text(f"EXPLAIN QUERY PLAN {sql}"))]
            assert not any("TEMP B-TREE" in step for step in plan), plan
