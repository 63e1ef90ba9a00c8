"""The administration pages of the data model: ADMIN only; the browser shows classes,
fields, status diagrams, views and the extension files; the diff page syncs."""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from flask import Flask

from tests.conftest import ADMIN_PASSWORD, PASSWORD, csrf_of


def page_client(application: Flask, username: str = "admin", password: str = ADMIN_PASSWORD):
    client = application.test_client()
    response = client.post("/api/auth/login", json={"username": username,
                                                    "password": password})
    assert response.status_code == 200
    return client


def test_model_page_shows_classes_diagrams_views_and_files(
        extended: Callable[..., Flask]) -> None:
    client = page_client(extended())
    page = client.get("/admin/datamodel").get_data(as_text=True)
    assert 'id="class-Genome"' in page and 'id="class-TaxonomyItem"' in page
    assert "<code>lab.json</code>" in page
    assert '<svg class="status-diagram"' in page
    assert "<title>Initial → InProgress</title>" in page
    assert "SampleOverview" in page
    assert 'id="datamodel-link"' in page


def test_a_broken_file_is_shown_on_the_model_page(extended: Callable[..., Flask]) -> None:
    application = extended()
    client = page_client(application)
    (Path(application.instance_path) / "datamodel" / "more.json").write_text(
        json.dumps({"classes": [{"name": "Freezer2", "prefix": "F"}]}))
    page = client.get("/admin/datamodel").get_data(as_text=True)
    assert "more.json: classes[0] (Freezer2): &#39;prefix&#39; must be" in page


def test_diff_page_syncs_and_shows_the_report(extended: Callable[..., Flask]) -> None:
    client = page_client(extended())
    page = client.get("/admin/datamodel/diff").get_data(as_text=True)
    assert "x_taxonomy_item" in page and 'id="sync-button"' in page
    answer = client.post("/admin/datamodel/sync", headers={"HX-Request": "true"},
                         data={"csrf_token": csrf_of(client)})
    assert answer.status_code == 200
    body = answer.get_data(as_text=True)
    assert body.lstrip().startswith('<section class="card" id="datamodel-diff"')
    assert "x_taxonomy_item, x_genome" in body and "No differences" in body


def test_pages_are_for_admins_only(extended: Callable[..., Flask]) -> None:
    application = extended()
    runner = application.test_cli_runner()
    result = runner.invoke(args=["users", "create", "plain", "--name", "Plain", "--department",
                                 "DEP00001", "--password-stdin"], input=PASSWORD + "\n")
    assert result.exit_code == 0, result.output
    plain = page_client(application, "plain", PASSWORD)
    for path in ("/admin/datamodel", "/admin/datamodel/diff"):
        assert plain.get(path).status_code == 403
        assert 'id="datamodel-link"' not in plain.get("/").get_data(as_text=True)
    anonymous = application.test_client().get("/admin/datamodel")
    assert anonymous.status_code == 302 and "/login" in anonymous.headers["Location"]


def test_entity_pages_serve_the_extension_classes(extended: Callable[..., Flask]) -> None:
    client = page_client(extended())
    csrf = csrf_of(client)
    assert client.post("/api/sync", headers={"X-CSRF-Token": csrf}).status_code == 200
    form = client.get("/entities/Genome/new").get_data(as_text=True)
    assert 'name="sizeMb"' in form and 'name="taxonomyID"' in form
    created = client.post("/api/entity", headers={"X-CSRF-Token": csrf}, json={"entities": [
        {"eClass": "Genome", "name": "Zebra finch", "sizeMb": 1200}]}).get_json()
    genome_id = created["entities"][0]["id"]
    listing = client.get("/entities/Genome").get_data(as_text=True)
    assert "Zebra finch" in listing
    detail = client.get(f"/entities/Genome/{genome_id}")
    assert detail.status_code == 200 and "1200" in detail.get_data(as_text=True)
    assert 'name="genomeID"' in client.get("/entities/Sample/new").get_data(as_text=True)
