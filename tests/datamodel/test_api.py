"""``/api/datamodel``, ``/api/datamodel/actual``, ``/api/datamodel/diff`` and ``POST /api/sync``
on a fresh install: the expected model, the reflected one, an empty diff, an idempotent sync."""
from __future__ import annotations

from collections.abc import Callable

from flask import Flask
from flask.testing import FlaskClient

from labapp.db import db
from labapp.model.registry import classes
from labapp.query.dbviews import views
from labapp.schema import schema_state
from tests.conftest import BACKEND
from tests.datamodel.conftest import admin_client


def test_expected_model_lists_every_class_field_status_and_view(
        client: FlaskClient, make_user, api_as) -> None:
    make_user("reader")
    response = api_as("reader").get("/api/datamodel")
    assert response.status_code == 200
    body = response.get_json()
    by_name = {item["name"]: item for item in body["classes"]}
    assert set(by_name) == {spec.name for spec in classes()}
    sample = by_name["Sample"]
    assert sample["idPrefix"] == "SAM"
    assert sample["parentLinks"] == ["parentID", "stepID", "experimentID", "plateID"]
    assert sample["statuses"][0] == sample["initialStatus"] == "Initial"
    assert "Discarded" in sample["transitions"]["Initial"]
    fields = {field["apiName"]: field for field in sample["fields"]}
    assert fields["plateID"]["ref"] == "Plate" and fields["plateID"]["type"] == "ref"
    assert fields["createdUtc"]["readOnly"] is True
    assert fields["amount"]["type"] == "float" and fields["amount"]["nullable"] is True
    assert {view["name"] for view in body["views"]} == set(views())
    overview = next(view for view in body["views"] if view["name"] == "SampleOverview")
    assert {"id", "departmentID", "projectID"} <= {c["name"] for c in overview["columns"]}


def test_actual_reflects_tables_indexes_and_views(client: FlaskClient, api_as) -> None:
    body = api_as("admin", password=_admin_password()).get("/api/datamodel/actual").get_json()
    tables = {table["name"]: table for table in body["tables"]}
    assert {"entity", "sample", "sequence", "model_state"} <= set(tables)
    columns = {column["name"]: column for column in tables["sample"]["columns"]}
    assert columns["amount"]["type"] == "FLOAT"
    assert columns["well"]["type"] == "VARCHAR(8)"
    assert "ix_entity_search_name" in {index["name"] for index in body["indexes"]}
    prefix = "v_" if BACKEND == "sqlite" else ""
    assert f"{prefix}SampleOverview" in {view["name"] for view in body["views"]}


def test_diff_is_empty_on_a_fresh_install(client: FlaskClient, api_as) -> None:
    body = api_as("admin", password=_admin_password()).get("/api/datamodel/diff").get_json()
    assert body.pop("empty") is True
    assert all(value == [] for value in body.values()), body


def test_sync_twice_changes_nothing_the_second_time(initialised: Callable[..., Flask]) -> None:
    application = initialised()
    client = admin_client(application)
    first = client.post("/api/sync")
    assert first.status_code == 200, first.get_json()
    second = client.post("/api/sync").get_json()
    assert second["changed"] is False
    assert all(second[key] == [] for key in ("migrations", "tables", "columns", "indexes",
                                             "views", "sequences", "roles"))
    assert client.get("/api/datamodel/diff").get_json()["empty"] is True


def test_sync_repairs_exactly_a_missing_view_column_and_sequence(
        initialised: Callable[..., Flask]) -> None:
    application = initialised()
    client = admin_client(application)
    client.post("/api/sync")
    with application.app_context():
        view = "v_Sample" if db.engine.dialect.name == "sqlite" else "Sample"
        with db.engine.begin() as connection:
            connection.exec_driver_sql(f'DROP VIEW "{view}"')
            connection.exec_driver_sql("ALTER TABLE dashboard DROP COLUMN description")
            connection.exec_driver_sql("DELETE FROM sequence WHERE id = 'Experiment'")

    diff = client.get("/api/datamodel/diff").get_json()
    assert diff["missingViews"] == [view]
    assert diff["missingColumns"] == [{"table": "dashboard", "column": "description",
                                       "type": "TEXT"}]
    assert diff["missingSequences"] == ["Experiment"]
    assert diff["empty"] is False

    report = client.post("/api/sync").get_json()
    assert report["views"] == ["Sample"]
    assert report["columns"] == ["dashboard.description"]
    assert report["sequences"] == ["Experiment"]
    assert report["tables"] == report["indexes"] == report["roles"] == []
    assert report["migrations"] == [] and report["modelChanged"] is False
    assert client.get("/api/datamodel/diff").get_json()["empty"] is True
    # The repaired view answers again.
    created = client.post("/api/entity", json={"entities": [{"eClass": "Experiment"}]})
    assert created.status_code == 201, created.get_json()
    assert created.get_json()["entities"][0]["id"] == "EXP00001"
    assert client.get("/api/query/view/Sample").status_code == 200


def test_sync_applies_pending_migrations(fresh_app: Callable[..., Flask]) -> None:
    application = fresh_app()
    runner = application.test_cli_runner()
    assert runner.invoke(args=["db", "upgrade", "b7c4e1a2d9f0"]).exit_code == 0
    result = runner.invoke(args=["sync"])
    assert result.exit_code == 0, result.output
    with application.app_context():
        heads = schema_state().expected
    assert '"migrations": [' in result.output
    assert heads and all(head in result.output for head in heads)
    assert "Synchronising" in result.output
    again = runner.invoke(args=["sync"])
    assert "The database matches the data model." in again.output, again.output


def test_access_rules(client: FlaskClient, make_user, api_as) -> None:
    make_user("plain")
    plain = api_as("plain")
    for method, path in (("GET", "/api/datamodel/actual"), ("GET", "/api/datamodel/diff"),
                         ("POST", "/api/sync")):
        assert plain.open(method, path).status_code == 403
        anonymous = client.open(path, method=method)
        assert anonymous.status_code == 401
        assert anonymous.get_json()["status"] == 401
    assert client.get("/api/datamodel").status_code == 401


def _admin_password() -> str:
    from tests.conftest import ADMIN_PASSWORD
    return ADMIN_PASSWORD
