"""Exports carry what a lab defined: the rows of its own classes and the values of the fields
it added to built-in ones come back after a restore, and a database that lacks their tables
is refused before anything is written."""
from __future__ import annotations

from collections.abc import Callable

from flask import Flask

from tests.datamodel.conftest import admin_client
from tests.helpers.entities import created_entities
from tests.sync.conftest import decoded, restore, save


def _a_lab_with_its_own_classes(extended: Callable[..., Flask]) -> Flask:
    app = extended()
    client = admin_client(app)
    assert client.post("/api/sync").status_code == 200
    (species,) = created_entities(client, {"eClass": "TaxonomyItem", "name": "Great tit",
                                           "scientificName": "Parus major", "rank": "Species"})
    (genome,) = created_entities(client, {"eClass": "Genome", "name": "Parus major v2",
                                          "taxonomyID": species["id"], "sizeMb": 1020.5,
                                          "sequencedOn": "2026-11-02"})
    created_entities(client, {"eClass": "Sample", "name": "Blood 1", "genomeID": genome["id"],
                              "coverage": 30})
    return app


def test_extension_rows_and_fields_survive_export_and_restore(
        extended: Callable[..., Flask]) -> None:
    export = save(_a_lab_with_its_own_classes(extended))
    content = decoded(export)
    assert [row["scientific_name"] for row in content["tables"]["x_taxonomy_item"]] == [
        "Parus major"]
    assert [row["size_mb"] for row in content["tables"]["x_genome"]] == [1020.5]
    (sample,) = content["tables"]["sample"]
    assert sample["coverage"] == 30 and sample["genome_id"] == "GEN00001"

    target = extended()
    assert admin_client(target).post("/api/sync").status_code == 200
    result = restore(target, export, "--force")
    assert result.exit_code == 0, result.output
    assert decoded(save(target)) == content
    client = admin_client(target)
    genome = client.get("/api/entity/Genome/GEN00001").get_json()
    assert genome["sizeMb"] == 1020.5 and genome["taxonomyID"] == "TAX00001"
    assert client.get("/api/entity/Sample/SAM00001").get_json()["coverage"] == 30


def test_a_database_without_the_lab_s_tables_is_refused_untouched(
        extended: Callable[..., Flask]) -> None:
    export = save(_a_lab_with_its_own_classes(extended))
    target = extended()  # the extension files are there, but no sync has made the tables
    before = decoded(save(target))
    result = restore(target, export, "--force")
    assert result.exit_code != 0
    assert "The database has no columns" in result.output  # the fields added to Sample
    assert "'genome_id'" in result.output and "of 'sample'" in result.output
    assert "flask --app labapp sync" in result.output
    after = decoded(save(target))
    assert after["tables"] == before["tables"]
