"""A saved widget whose lab-defined class a later data-model sync removed: its config was
checked when saved, so the widget says the class is gone instead of failing with a 500."""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from flask import Flask

from tests.datamodel.conftest import (  # noqa: F401
    LAB_EXTENSION,
    _built_in_model_after,
    admin_client,
    extended,
)


def test_a_widget_over_a_removed_class_says_so(extended: Callable[..., Flask]) -> None:  # noqa: F811
    application = extended()
    client = admin_client(application)
    assert client.post("/api/sync").status_code == 200
    saved = client.post("/api/dashboard", json={
        "name": "Genomes", "description": None, "shares": {}, "widgets": [
            {"plugin": {"app": "labapp", "plugin": plugin},
             "gridster": {"x": 0, "y": 0, "cols": 6, "rows": 4},
             "config": config, "header": None}
            for plugin, config in (("status-counts", {"eClass": "Genome"}),
                                   ("saved-list", {"eClass": "Genome"}),
                                   ("created-per-week", {"eClass": "Genome"}))]})
    assert saved.status_code == 201, saved.get_json()
    board = saved.get_json()["id"]
    before = client.get(f"/api/dashboard/{board}/widget/0")
    assert before.status_code == 200
    assert before.get_json()["data"]["eClass"] == "Genome"

    # The lab drops Genome (and the Sample field that referred to it), then syncs.
    without = {"classes": [LAB_EXTENSION["classes"][0]]}
    (Path(application.instance_path) / "datamodel" / "lab.json").write_text(json.dumps(without))
    report = client.post("/api/sync")
    assert report.status_code == 200 and report.get_json()["modelChanged"] is True
    assert client.get("/api/datamodel/Genome").status_code == 404

    for index in range(3):
        api = client.get(f"/api/dashboard/{board}/widget/{index}")
        assert api.status_code == 200, api.get_data(as_text=True)
        assert api.get_json()["data"] == {
            "problem": "Class 'Genome' no longer exists in the data model; "
                       "edit this widget to choose another."}
        page = client.get(f"/dashboards/{board}/widget/{index}")
        assert page.status_code == 200, page.get_data(as_text=True)
        assert "Class &#39;Genome&#39; no longer exists" in page.get_data(as_text=True)
