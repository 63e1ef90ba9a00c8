"""Fixtures of the data-model tests: an admin client, fresh synchronisable applications."""
from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest
from flask import Flask
from flask.testing import FlaskClient

from labapp.model.extensions import Extensions, install
from tests.conftest import ADMIN_PASSWORD, bearer_header, login, run_init


def admin_client(application: Flask) -> FlaskClient:
    """A client sending the admin's bearer token on every request."""
    client = application.test_client()
    token = login(client, "admin", ADMIN_PASSWORD)["accessToken"]
    client.environ_base["HTTP_AUTHORIZATION"] = bearer_header(token)["Authorization"]
    return client


@pytest.fixture(autouse=True)
def _built_in_model_after() -> Iterator[None]:
    """The registry is one per process: leave it with the built-in model for other tests."""
    yield
    install(Extensions())


@pytest.fixture
def initialised(fresh_app: Callable[..., Flask]) -> Callable[..., Flask]:
    """Factory: a new application on a new database as ``flask init`` leaves it."""

    def make(**overrides) -> Flask:
        return fresh_app(initialised=True, **overrides)

    return make


LAB_EXTENSION = {
    "classes": [
        {"name": "TaxonomyItem", "prefix": "TAX", "workflow": "activeInactive",
         "parentLinks": ["parentID"], "unique": ["scientificName"],
         "fields": [{"name": "scientificName", "type": "str", "maxLength": 200},
                    {"name": "rank", "type": "str", "choices": ["Order", "Family", "Species"]},
                    {"name": "parentID", "type": "ref(TaxonomyItem)"}]},
        {"name": "Genome", "prefix": "GEN", "workflow": "workflow",
         "parentLinks": ["taxonomyID"],
         "fields": [{"name": "taxonomyID", "type": "ref(TaxonomyItem)"},
                    {"name": "assembly", "type": "str"},
                    {"name": "sizeMb", "type": "float", "minimum": 0},
                    {"name": "sequencedOn", "type": "date"}]},
    ],
    "fields": {"Sample": [{"name": "genomeID", "type": "ref(Genome)"},
                          {"name": "coverage", "type": "int"}]},
}


@pytest.fixture
def extended(tmp_path) -> Iterator[Callable[..., Flask]]:
    """Factory: an initialised application whose instance folder holds ``files`` (name →
    JSON document) in ``datamodel/`` before it starts."""
    from contextlib import ExitStack

    from tests.conftest import build_app, dispose
    from tests.databases import new_database

    with ExitStack() as cleanup:
        def make(files: dict[str, object] | None = None) -> Flask:
            instance = tmp_path / f"instance-{len(list(tmp_path.iterdir()))}"
            folder = instance / "datamodel"
            folder.mkdir(parents=True)
            for name, document in (files or {"lab.json": LAB_EXTENSION}).items():
                (folder / name).write_text(json.dumps(document))
            url = cleanup.enter_context(new_database(instance))
            application = build_app(instance, url)
            cleanup.callback(dispose, application)
            run_init(application)
            return application

        yield make
