"""``GET /api/query/view/{name}``: the database views, their rows, OData options and row-level
security (the lab is described in ``tests/query/lab.py``)."""
from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from sqlalchemy import text

from labapp.db import db
from labapp.model.registry import classes
from labapp.query.dbviews import find_view, views
from tests.conftest import ApiClient
from tests.contracts.problem import assert_problem
from tests.entities.conftest import Grants, body_of, listing
from tests.query.lab import HOME_PATH, ids, qv

DIRECTORY_VIEWS = {"User", "Department"}


def view(api: ApiClient, name: str, **options: Any) -> dict[str, Any]:
    """``GET /api/query/view/{name}`` with OData options given without their ``$``."""
    query = {f"${option}": value for option, value in options.items()}
    return body_of(api.get(f"/api/query/view/{name}", query_string=query), 200)


def rows_by_id(api: ApiClient, name: str, **options: Any) -> dict[str, dict[str, Any]]:
    return {row["id"]: row for row in view(api, name, **options)["data"]}


def test_every_view_has_the_columns_its_spec_lists(app: Flask) -> None:
    with app.app_context():
        dialect = db.engine.dialect.name
        for spec in views().values():
            quoted = db.engine.dialect.identifier_preparer.quote(spec.db_name(dialect))
            result = db.session.execute(text(f"SELECT * FROM {quoted} WHERE 1 = 0"))
            assert list(result.keys()) == [column.column for column in spec.columns], spec.name


def test_flat_views_cover_every_class_and_field() -> None:
    for spec in classes():
        names = [c.name for c in views()[spec.name].columns]
        assert names == [name for name, field in spec.fields.items() if field.attr is not None]
        assert "roles" not in names and "passwordHash" not in names


def test_view_names_are_case_insensitive_and_unknown_views_are_404(
        admin: ApiClient, lab: dict[str, Any]) -> None:
    assert find_view("sampleoverview") is views()["SampleOverview"]
    assert ids(view(admin, "sampleOVERVIEW")["data"]) == ids(view(admin, "SampleOverview")["data"])
    assert_problem(admin.get("/api/query/view/Nope"), 404, "unknown_view")


@pytest.mark.parametrize("eclass", ["Sample", "Experiment", "Step", "Location", "StepInput",
                                    "User", "Department", "Project", "Plate"])
def test_a_flat_view_row_is_the_entity_list_row(admin: ApiClient, lab: dict[str, Any],
                                                eclass: str) -> None:
    entities = listing(admin, eclass)["data"]
    rows = view(admin, eclass)["data"]
    assert rows == entities and rows


def test_sample_overview_joins_owner_experiment_step_plate_and_location(
        admin: ApiClient, lab: dict[str, Any]) -> None:
    rows = rows_by_id(admin, "SampleOverview")
    first = rows[qv("SAM1")]
    assert (first["userID"], first["ownerName"]) == ("admin", "Administrator")
    assert {key: first[key] for key in ("experimentID", "experimentName", "stepName",
                                        "locationID", "locationName", "locationPath",
                                        "amount", "unit", "dateTaken", "eClass")} == {
        "experimentID": qv("EXP1"), "experimentName": "Growth curve", "stepName": "Step 1",
        "locationID": qv("LOC1"), "locationName": "Freezer", "locationPath": HOME_PATH,
        "amount": 1.5, "unit": "ml", "dateTaken": "2026-01-31", "eClass": "Sample"}
    on_plate = rows[qv("SAM2")]
    assert (on_plate["plateID"], on_plate["plateName"], on_plate["well"]) == (
        qv("PLT1"), "Plate one", "B07")
    assert (on_plate["locationID"], on_plate["locationPath"]) == (qv("LOC1"), HOME_PATH)
    assert rows[qv("SAMB")]["locationID"] == qv("LOC2")  # its own location beats the plate's
    assert rows[qv("SAM3")]["stepID"] is None and rows[qv("SAM3")]["stepName"] is None
    assert rows[qv("SAMB")]["departmentID"] == lab["B"]
    assert "attributes" not in first


def test_storage_overview_counts_samples_and_plates(admin: ApiClient,
                                                    lab: dict[str, Any]) -> None:
    rows = rows_by_id(admin, "StorageOverview")
    freezer, box = rows[qv("LOC1")], rows[qv("LOC2")]
    assert (freezer["capacity"], freezer["stored"], freezer["available"], freezer["path"]) == (
        3, 3, 0, HOME_PATH)
    # SAMB is on a plate: it counts as the plate (in the freezer), as in the storage API.
    assert (box["capacity"], box["stored"], box["available"], box["parentID"]) == (
        None, 0, None, qv("LOC1"))
    assert freezer["locationType"] == "Freezer"


def test_experiment_progress_counts_steps_per_status(admin: ApiClient,
                                                    lab: dict[str, Any]) -> None:
    rows = rows_by_id(admin, "ExperimentProgress")
    counts = ("stepsTotal", "stepsInitial", "stepsInProgress", "stepsCompleted",
              "stepsCanceled")
    assert [rows[qv("EXP1")][key] for key in counts] == [4, 1, 1, 2, 0]
    assert [rows[qv("EXP2")][key] for key in counts] == [0, 0, 0, 0, 0]
    assert rows[qv("EXP1")]["startDate"] == "2026-01-10"
    assert rows[qv("EXP1")]["projectID"] == lab["P"]


def test_step_sample_input_joins_step_experiment_and_input(
        admin: ApiClient, lab: dict[str, Any]) -> None:
    row = rows_by_id(admin, "StepSampleInput")[qv("SIN1")]
    assert {key: row[key] for key in ("stepID", "stepName", "stepIndex", "stepStatus",
                                      "experimentID", "experimentName", "experimentStatus",
                                      "inputClass", "inputID", "inputName", "inputPosition",
                                      "amount", "unit")} == {
        "stepID": qv("STP2"), "stepName": "Step 2", "stepIndex": 2, "stepStatus": "InProgress",
        "experimentID": qv("EXP1"), "experimentName": "Growth curve",
        "experimentStatus": "InProgress", "inputClass": "Sample", "inputID": qv("SAM1"),
        "inputName": "Alpha", "inputPosition": 1, "amount": 0.5, "unit": "ml"}


@pytest.mark.parametrize(("name", "options", "expected"), [
    ("Sample", {"filter": "attributes.batch eq 'B1'"}, ["SAM1"]),
    ("Sample", {"filter": "attributes.ph gt 6.5"}, ["SAM1"]),
    ("Sample", {"filter": "attributes/ph eq 6", "orderby": "name"}, ["SAM2"]),
    ("Sample", {"filter": "startswith(id, 'QV-') and amount ge 1.5", "orderby": "amount desc"},
     ["SAM3", "SAM1"]),
    ("Sample", {"filter": "dateTaken eq 2026-01-31"}, ["SAM1"]),
    ("Sample", {"filter": "startswith(id, 'QV-')", "orderby": "attributes.batch desc, id"},
     ["SAM3", "SAMB", "SAM2", "SAM1"]),
    # SAMB's box sits in the freezer: the box's hierarchy (kept by storage) says so.
    ("SampleOverview", {"filter": "contains(locationPath, 'freezer')", "orderby": "ID"},
     ["SAM1", "SAM2", "SAM3", "SAMB"]),
    ("SampleOverview", {"filter": "experimentName eq 'Growth curve' and plateID isnull"},
     ["SAM1"]),
    ("StorageOverview", {"filter": "available eq 0"}, ["LOC1"]),
    ("StorageOverview", {"filter": "startswith(id, 'QV-') and available eq null"}, ["LOC2"]),
    ("ExperimentProgress", {"filter": "stepsCompleted gt 1"}, ["EXP1"]),
    ("ExperimentProgress", {"filter": "createdUtc gt 2000-01-01T00:00:00Z and stepsTotal eq 0"
                                      " and startswith(id, 'QV-')"}, ["EXP2"]),
    ("StepSampleInput", {"filter": "inputID in ('QV-SAM1', 'QV-SAM2')"}, ["SIN1"]),
    ("User", {"filter": "isActive eq true and id eq 'admin'"}, []),
])
def test_filter_and_orderby_on_views(admin: ApiClient, lab: dict[str, Any],
                                     name: str, options: dict[str, str],
                                     expected: list[str]) -> None:
    assert ids(view(admin, name, **options)["data"]) == [qv(item) for item in expected]


def test_user_view_types_booleans_and_datetimes(admin: ApiClient,
                                                lab: dict[str, Any]) -> None:
    found = view(admin, "User", filter="isActive and id eq 'admin'")["data"]
    assert [row["id"] for row in found] == ["admin"] and found[0]["isActive"] is True
    assert found[0]["createdUtc"].endswith("Z")


def test_select_and_paging(admin: ApiClient, lab: dict[str, Any]) -> None:
    page = view(admin, "Sample", filter="startswith(id, 'QV-')", orderby="name",
                select="name, attributes.batch", top=2, skip=1)
    assert page["total"] == 4 and page["nextSkip"] == 501
    assert page["data"] == [
        {"id": qv("SAMB"), "eClass": "Sample", "name": "Bravo", "attributes.batch": None},
        {"id": qv("SAM3"), "eClass": "Sample", "name": "Gamma", "attributes.batch": None}]
    whole = view(admin, "Sample", filter="id eq 'QV-SAM1'", select="attributes")["data"]
    assert whole == [{"id": qv("SAM1"), "eClass": "Sample",
                      "attributes": {"batch": "B1", "ph": 7.5}}]
    overview = view(admin, "StorageOverview", filter="id eq 'QV-LOC1'",
                    select="AVAILABLE,path")["data"]
    assert overview == [{"id": qv("LOC1"), "eClass": "Location", "available": 0,
                         "path": HOME_PATH}]


def test_pages_hold_at_most_500_rows(admin: ApiClient, lab: dict[str, Any]) -> None:
    page = view(admin, "Sample", top=100000, skip=0)
    assert len(page["data"]) == page["total"] <= 500 and page["nextSkip"] == 500


@pytest.mark.parametrize(("name", "options", "status", "code"), [
    ("Sample", {"filter": "nmae eq 'x'"}, 400, "invalid_filter"),
    ("Sample", {"filter": "amount eq 'x'"}, 400, "invalid_filter"),
    ("Sample", {"filter": "attributes eq 'x'"}, 400, "invalid_filter"),
    ("SampleOverview", {"filter": "attributes.batch eq 'x'"}, 400, "invalid_filter"),
    ("Sample", {"select": "name,nope"}, 400, "invalid_select"),
    ("Sample", {"orderby": "attributes"}, 400, "invalid_orderby"),
    ("Sample", {"orderby": "name sideways"}, 400, "invalid_orderby"),
    ("Sample", {"top": "-1"}, 400, "invalid_paging"),
    ("Sample", {"expand": "x"}, 400, "validation_failed"),
])
def test_bad_options_are_400(admin: ApiClient, lab: dict[str, Any], name: str,
                             options: dict[str, str], status: int, code: str) -> None:
    query = {f"${option}": value for option, value in options.items()}
    assert_problem(admin.get(f"/api/query/view/{name}", query_string=query), status, code,
                   errors=True)


def test_anonymous_callers_are_401(client) -> None:
    assert_problem(client.get("/api/query/view/Sample"), 401, "not_authenticated")


def test_a_member_of_another_department_sees_none_of_its_rows(
        bob: ApiClient, lab: dict[str, Any], grant: Grants) -> None:
    mine = {qv("SAMB")}
    for name in views():
        shown = set(ids(view(bob, name)["data"]))
        if name in DIRECTORY_VIEWS:
            continue
        assert shown <= mine, name
        assert all(row["departmentID"] != lab["A"] for row in view(bob, name)["data"]), name
    assert set(ids(view(bob, "SampleOverview")["data"])) == mine

    grant.project(lab["P"], "Read", user="qv-bob")
    in_project = {qv(name) for name in ("EXP1", "STP1", "STP2", "STP3", "STP4", "SAM1",
                                        "SAM2", "SIN1")}
    assert set(ids(view(bob, "Sample")["data"])) == {qv("SAM1"), qv("SAM2"), qv("SAMB")}
    assert set(ids(view(bob, "ExperimentProgress")["data"])) == {qv("EXP1")}
    assert set(ids(view(bob, "StepSampleInput")["data"])) == {qv("SIN1")}
    assert set(ids(view(bob, "StorageOverview")["data"])) == set()
    seen = set().union(*(ids(view(bob, name)["data"]) for name in views()
                         if name not in DIRECTORY_VIEWS))
    assert seen == in_project | mine
    assert [row["id"] for row in view(bob, "Project")["data"]] == [lab["P"]]


def test_directory_views_are_readable_by_everyone(bob: ApiClient,
                                                  lab: dict[str, Any]) -> None:
    assert lab["A"] in {row["id"] for row in view(bob, "Department")["data"]}
    assert "admin" in {row["id"] for row in view(bob, "User")["data"]}


def test_joined_values_of_entities_the_caller_cannot_read_are_null(
        bob: ApiClient, admin: ApiClient, lab: dict[str, Any],
        grant: Grants) -> None:
    joined = ("experimentName", "stepName", "plateName", "locationID", "locationName",
              "locationPath")
    assert [rows_by_id(admin, "SampleOverview")[qv("SAMB")][key] for key in joined] == [
        "Growth curve", "Step 2", "Plate one", qv("LOC2"), "Box", "Freezer / Box"]
    row = rows_by_id(bob, "SampleOverview")[qv("SAMB")]
    assert [row[key] for key in joined] == [None] * 6
    assert (row["experimentID"], row["plateID"], row["ownerName"]) == (
        qv("EXP1"), qv("PLT1"), "Administrator")
    # A filter or sort on a hidden value cannot reveal it.
    assert view(bob, "SampleOverview", filter="experimentName eq 'Growth curve'")["data"] == []
    assert view(bob, "SampleOverview", filter="plateName isnull")["total"] == 1

    grant.project(lab["P"], "Read", user="qv-bob")
    row = rows_by_id(bob, "SampleOverview")[qv("SAMB")]
    assert [row[key] for key in joined] == ["Growth curve", "Step 2", None, None, None, None]
    assert ids(view(bob, "SampleOverview", filter="experimentName eq 'Growth curve'")["data"]
               ) == [qv("SAM1"), qv("SAMB")]
