"""The example of docs/examples/mirror_changes.py, run as a user would run it against a live
server: its mirror holds what the entity list shows the user, after a copy, after changes
(one of them taking a sample out of the user's sight) and after its cursor expired."""
from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

from sqlalchemy import update

from labapp.changefeed import retention
from labapp.db import db
from labapp.model import ChangeLogEntry
from labapp.model.types import utc_now
from tests.changefeed.conftest import Lab
from tests.conftest import serving
from tests.entities.conftest import body_of

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "mirror_changes.py"
RUN_TIMEOUT_S = 120


def _mirror(url: str, token: str, database: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLE), "--url", url, "--user", "alice", "--token", token,
         "--eclass", "Sample", "--database", str(database), "--once"],
        capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=True)


def _mirrored(database: Path) -> dict[str, tuple[int, str]]:
    with sqlite3.connect(database) as connection:
        return {entity_id: (version, json.loads(body)["name"])
                for entity_id, version, body in connection.execute(
                    "SELECT id, version, body FROM entity")}


def _listed(lab: Lab) -> dict[str, tuple[int, str]]:
    page = body_of(lab.alice.get("/api/entity/Sample", query_string={"$top": "500"}), 200)
    return {entity["id"]: (entity["version"], entity["name"]) for entity in page["data"]}


def test_the_mirror_follows_what_the_user_may_read(lab: Lab, tmp_path: Path) -> None:
    token = body_of(lab.alice.post("/api/user/pat", json={"name": "mirror"}), 201)["value"]
    database = tmp_path / "mirror.sqlite"
    kept, moved, renamed, _ = lab.save(
        *({"eClass": "Sample", "name": name, "departmentID": "DEP-X"}
          for name in ("kept", "moved", "renamed")),
        {"eClass": "Sample", "name": "never seen", "departmentID": "DEP-Y"})

    with serving(lab.app) as url:
        _mirror(url, token, database)
        first = _mirrored(database)
        lab.save({"id": moved["id"], "eClass": "Sample", "departmentID": "DEP-Y"},
                 {"id": renamed["id"], "eClass": "Sample", "name": "renamed again"})
        added, = lab.save({"eClass": "Sample", "name": "added", "departmentID": "DEP-X"})
        lab.save({"eClass": "Location", "name": "a box", "departmentID": "DEP-X"})
        _mirror(url, token, database)
        followed = _mirrored(database)
        lab.save({"id": kept["id"], "eClass": "Sample", "name": "kept, after expiry"})
        lab.save({"eClass": "Location", "name": "another box", "departmentID": "DEP-X"})
        with lab.app.app_context():
            with db.session.begin():
                db.session.execute(update(ChangeLogEntry).values(
                    created_utc=utc_now() - timedelta(days=100)))
            retention.remove_expired(90)
            db.session.remove()
        restarted = _mirror(url, token, database)

    assert set(first) == {kept["id"], moved["id"], renamed["id"]}
    assert set(followed) == {kept["id"], renamed["id"], added["id"]}
    assert followed[renamed["id"]] == (2, "renamed again")
    assert "starting over" in restarted.stderr
    assert _mirrored(database) == _listed(lab)
