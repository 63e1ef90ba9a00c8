"""A bad extension file stops the start-up with a message naming the file and the field,
and nothing of any file is loaded; at run time the admin's diff and sync answer 400."""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from flask import Flask

from labapp.model.extensions import ExtensionError
from labapp.model.registry import find_class
from tests.conftest import build_app
from tests.datamodel.conftest import LAB_EXTENSION, admin_client

GOOD = {"classes": [{"name": "Incubator", "prefix": "INC",
                     "fields": [{"name": "setPoint", "type": "float"}]}]}


@pytest.mark.parametrize(("document", "message"), [
    ({"classes": [{"name": "Genome", "prefix": "GEN",
                   "fields": [{"name": "size", "type": "bigness"}]}]},
     "bad.json: classes[0] (Genome).fields[0] (size): type 'bigness' is not one of"),
    ({"classes": [{"name": "Genome", "prefix": "SAM"}]},
     "bad.json: class Genome: prefix SAM is already used"),
    ({"classes": [{"name": "Sample", "prefix": "SMP"}]},
     "bad.json: class Sample: is already defined"),
    ({"fields": {"Sample": [{"name": "amount", "type": "float"}]}},
     "bad.json: fields.Sample (amount): the class already has this field"),
    ({"fields": {"Sample": [{"name": "genomeID", "type": "ref(Genome)"}]}},
     "bad.json: fields.Sample: genomeID: ref target Genome is not a class"),
    ({"classes": [{"name": "Genome", "prefix": "GEN", "colour": "red"}]},
     "bad.json: classes[0] (Genome): unknown key(s) ['colour']"),
    ({"classes": [{"name": "Genome", "prefix": "GEN", "workflow": "sometimes"}]},
     "bad.json: classes[0] (Genome): workflow 'sometimes' is not one of"),
    ({"classes": [{"name": "Genome", "prefix": "GEN", "parentLinks": ["taxonomyID"]}]},
     "bad.json: classes[0] (Genome): 'parentLinks' must list fields of the class"),
    ({"classes": [{"name": "Genome", "prefix": "GEN",
                   "fields": [{"name": "label", "type": "str", "minimum": 1}]}]},
     "bad.json: classes[0] (Genome).fields[0] (label): 'minimum' is a number, for int and"),
    ("not json", "bad.json: not valid JSON"),
])
def test_a_bad_file_stops_the_start_naming_file_and_field(
        tmp_path: Path, document: object, message: str) -> None:
    folder = tmp_path / "instance" / "datamodel"
    folder.mkdir(parents=True)
    (folder / "a-good.json").write_text(json.dumps(GOOD))
    (folder / "bad.json").write_text(document if isinstance(document, str)
                                     else json.dumps(document))
    with pytest.raises(ExtensionError) as raised:
        build_app(tmp_path / "instance", f"sqlite:///{tmp_path / 'labapp.db'}")
    assert message in str(raised.value)
    # Nothing half-loaded: not even the good file's class.
    assert find_class("Incubator") is None


def test_a_file_broken_at_run_time_is_a_400_and_the_model_stays(
        extended: Callable[..., Flask]) -> None:
    application = extended()
    client = admin_client(application)
    client.post("/api/sync")
    broken = {**LAB_EXTENSION, "classes": [{"name": "Genome", "prefix": 7}]}
    (Path(application.instance_path) / "datamodel" / "lab.json").write_text(json.dumps(broken))
    for response in (client.get("/api/datamodel/diff"), client.post("/api/sync")):
        assert response.status_code == 400
        body = response.get_json()
        assert "lab.json: classes[0] (Genome): 'prefix' must be" in body["detail"]
    assert find_class("TaxonomyItem") is not None
    assert client.get("/api/entity/TaxonomyItem").status_code == 200
