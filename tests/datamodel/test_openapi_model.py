"""The OpenAPI document describes the data model in use: extension classes and fields join the
entity batch's schemas, and the document follows when the model changes."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Flask

from labapp.model.extensions import Extensions, install


def _schemas(application: Flask) -> dict[str, Any]:
    response = application.test_client().get("/api/openapi.json")
    assert response.status_code == 200
    return response.get_json()["components"]["schemas"]


def test_extension_classes_and_fields_are_described(extended: Callable[..., Flask]) -> None:
    application = extended()
    schemas = _schemas(application)

    genome = schemas["EntityGenome"]["properties"]
    assert genome["eClass"]["const"] == "Genome"
    assert genome["sizeMb"]["minimum"] == 0
    assert genome["sequencedOn"]["format"] == "date"
    assert genome["status"]["enum"][0] == "Initial"
    assert schemas["EntityTaxonomyItem"]["properties"]["rank"]["enum"] == [
        "Order", "Family", "Species", None]
    assert set(schemas["EntitySample"]["properties"]) >= {"genomeID", "coverage"}
    assert {"Genome", "TaxonomyItem"} <= set(schemas["EntityItem"]["discriminator"]["mapping"])
    assert {"Genome", "TaxonomyItem"} <= set(schemas["EntityClass"]["enum"])


def test_the_document_follows_a_change_of_the_model(extended: Callable[..., Flask]) -> None:
    application = extended()
    assert "EntityGenome" in _schemas(application)

    with application.app_context():
        install(Extensions())

    schemas = _schemas(application)
    assert "EntityGenome" not in schemas
    assert "genomeID" not in schemas["EntitySample"]["properties"]
