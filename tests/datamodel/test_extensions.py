"""Lab-defined classes and fields (decisions §14) going through sync, create, ``$filter``, the
dataset, the hierarchy, their views and the datamodel endpoint."""
from __future__ import annotations

from collections.abc import Callable

from flask import Flask

from tests.datamodel.conftest import admin_client
from tests.helpers.entities import created_entities


def test_sync_creates_what_the_extension_needs(extended: Callable[..., Flask]) -> None:
    client = admin_client(extended())
    diff = client.get("/api/datamodel/diff").get_json()
    assert "missingTables" in diff, diff
    assert diff["missingTables"] == ["x_genome", "x_taxonomy_item"]
    assert {(c["table"], c["column"]) for c in diff["missingColumns"]} == {
        ("sample", "genome_id"), ("sample", "coverage")}
    # flask init already made the default sequences of every class, extensions included.
    assert diff["missingSequences"] == []
    assert {"Genome", "TaxonomyItem"} <= {v.removeprefix("v_") for v in diff["missingViews"]}
    assert {item["name"] for item in diff["changedViews"]} == {
        "v_Sample" if diff["missingViews"][0].startswith("v_") else "Sample"}

    report = client.post("/api/sync").get_json()
    assert report["tables"] == ["x_taxonomy_item", "x_genome"]
    assert sorted(report["columns"]) == ["sample.coverage", "sample.genome_id"]
    assert report["views"] == ["Genome", "Sample", "TaxonomyItem"]
    assert report["modelChanged"] is True
    after = client.get("/api/datamodel/diff").get_json()
    assert after["empty"] is True, {k: v for k, v in after.items() if v}
    assert client.post("/api/sync").get_json()["changed"] is False


def test_an_extension_class_works_like_a_built_in_one(extended: Callable[..., Flask]) -> None:
    client = admin_client(extended())
    client.post("/api/sync")
    order, species = created_entities(
        client, {"eClass": "TaxonomyItem", "id": "#order", "name": "Passeriformes",
                 "scientificName": "Passeriformes", "rank": "Order"},
        {"eClass": "TaxonomyItem", "name": "Great tit", "scientificName": "Parus major",
         "rank": "Species", "parentID": "#order"})
    assert order["id"] == "TAX00001" and species["parentID"] == "TAX00001"
    assert species["status"] == "Active"
    (genome,) = created_entities(client, {"eClass": "Genome", "name": "Parus major v2",
                                          "taxonomyID": species["id"], "sizeMb": 1020.5,
                                          "sequencedOn": "2026-11-02"})
    assert genome["id"] == "GEN00001" and genome["status"] == "Initial"
    (sample,) = created_entities(client, {"eClass": "Sample", "name": "Blood 1",
                                          "genomeID": genome["id"], "coverage": 30})
    assert sample["genomeID"] == genome["id"] and sample["coverage"] == 30

    # Validation sees the fields: a wrong type and an unknown choice are refused.
    bad = client.post("/api/entity", json={"entities": [
        {"eClass": "Genome", "sizeMb": "big"}]})
    assert bad.status_code == 400
    bad = client.post("/api/entity", json={"entities": [
        {"eClass": "Genome", "sizeMb": -1}]})
    assert bad.get_json()["errors"] == [{"field": "entities.0.sizeMb",
                                         "message": "must not be less than 0"}]
    bad = client.post("/api/entity", json={"entities": [
        {"eClass": "TaxonomyItem", "rank": "Kingdom"}]})
    assert bad.status_code == 400

    # A unique field is unique.
    duplicate = client.post("/api/entity", json={"entities": [
        {"eClass": "TaxonomyItem", "scientificName": "Parus major"}]})
    assert duplicate.status_code == 409
    duplicate = client.post("/api/entity", json={"entities": [
        {"eClass": "TaxonomyItem", "id": order["id"], "scientificName": "Parus major"}]})
    assert duplicate.status_code == 409, duplicate.get_json()

    # $filter and $select on the list.
    listed = client.get("/api/entity/Genome", query_string={
        "$filter": f"taxonomyID eq '{species['id']}' and sizeMb gt 1000",
        "$select": "id,sizeMb"}).get_json()
    assert [row["id"] for row in listed["data"]] == [genome["id"]]
    listed = client.get("/api/entity/Sample", query_string={
        "$filter": "coverage ge 30"}).get_json()
    assert [row["id"] for row in listed["data"]] == [sample["id"]]

    # The dataset joins across them.
    answer = client.post("/api/query/dataset", json=[
        {"collection": "genomes", "eClass": "Genome",
         "filters": [{"field": "taxonomyID", "value": species["id"]}]},
        {"collection": "samples", "eClass": "Sample",
         "filters": [{"field": "genomeID", "in": "genomes.id"}]}]).get_json()
    assert [row["id"] for row in answer["samples"]] == [sample["id"]]

    # The hierarchy follows the parent links: order → species → genome.
    tree = client.get(f"/api/query/hierarchy/Genome/{genome['id']}").get_json()
    assert [item["id"] for item in tree["ancestors"]] == [order["id"], species["id"]]
    tree = client.get(f"/api/query/hierarchy/TaxonomyItem/{order['id']}").get_json()
    assert tree["children"][0]["id"] == species["id"]
    assert tree["children"][0]["children"][0]["id"] == genome["id"]

    # Its flat view, and the Sample view with the added field.
    rows = client.get("/api/query/view/Genome").get_json()["data"]
    assert rows[0]["taxonomyID"] == species["id"] and rows[0]["sizeMb"] == 1020.5
    rows = client.get("/api/query/view/Sample").get_json()["data"]
    assert rows[0]["genomeID"] == genome["id"]

    # The datamodel endpoint.
    model = {item["name"]: item for item in client.get("/api/datamodel").get_json()["classes"]}
    assert model["Genome"]["idPrefix"] == "GEN" and model["Genome"]["builtIn"] is False
    assert model["TaxonomyItem"]["parentLinks"] == ["parentID"]
    assert "genomeID" in {field["apiName"] for field in model["Sample"]["fields"]}

    # Search finds the lab's classes, and filters on their eClass.
    found = client.get("/api/search/Parus", query_string={"$filter": "eClass eq 'Genome'"})
    assert found.status_code == 200, found.get_json()
    assert [item["id"] for item in found.get_json()["data"]] == [genome["id"]]
    found = client.get("/api/search/Passeriformes").get_json()["data"]
    assert order["id"] in {item["id"] for item in found}

    # OData: $metadata describes the extension classes' views, and their feeds serve rows.
    metadata = client.get("/odata/$metadata").get_data(as_text=True)
    assert '<EntityType Name="Genome">' in metadata
    assert '<Property Name="taxonomyID" Type="Edm.String"' in metadata
    assert '<Property Name="genomeID" Type="Edm.String"' in metadata
    assert "TaxonomyItem" in {item["name"] for item in client.get("/odata").get_json()["value"]}
    feed = client.get("/odata/Genome", query_string={
        "$filter": "sizeMb gt 1000", "$select": "id,taxonomyID"}).get_json()
    assert feed["value"] == [{"id": genome["id"], "taxonomyID": species["id"]}]


def test_a_column_no_longer_declared_stays_and_is_reported(
        extended: Callable[..., Flask], tmp_path) -> None:
    from tests.datamodel.conftest import LAB_EXTENSION

    application = extended()
    client = admin_client(application)
    client.post("/api/sync")
    created_entities(client, {"eClass": "Sample", "coverage": 12})
    less = {**LAB_EXTENSION, "fields": {"Sample": [{"name": "genomeID", "type": "ref(Genome)"}]}}
    import json
    from pathlib import Path
    (Path(application.instance_path) / "datamodel" / "lab.json").write_text(json.dumps(less))
    diff = client.get("/api/datamodel/diff").get_json()
    assert diff["extraColumns"] == [{"table": "sample", "column": "coverage", "type": "INTEGER"}]
    report = client.post("/api/sync").get_json()
    assert report["columns"] == [] and report["modelChanged"] is True
    assert client.get("/api/datamodel/diff").get_json()["extraColumns"] == diff["extraColumns"]
    listed = client.get("/api/entity/Sample").get_json()["data"]
    assert "coverage" not in listed[0]
