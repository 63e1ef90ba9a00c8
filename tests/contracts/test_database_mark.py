"""Every test that touches a database carries the ``db`` mark, so the PostgreSQL pass (which
runs ``-m db`` only) cannot lose a new database test. The suite is collected in a process of
its own and each unmarked test's function and fixtures are read for a way to a database."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_test_reaching_a_database_is_marked_db(tmp_path: Path) -> None:
    audit = tmp_path / "audit.json"
    environment = {**os.environ, "LABAPP_DATABASE_AUDIT": str(audit), "PYTHONPATH": str(ROOT)}
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "-p", "no:xdist", "-p", "tests.helpers.database_audit", "-m", "not db", "tests"],
        cwd=ROOT, env=environment, capture_output=True, text=True, timeout=600)
    assert collected.returncode == 0, collected.stdout[-2000:] + collected.stderr[-2000:]
    findings = json.loads(audit.read_text())
    assert findings == {}, (
        "these tests reach a database but are not marked db (add the fixture to "
        "DATABASE_FIXTURES in tests/helpers/database_marker.py, or mark them db): "
        + json.dumps(findings, indent=1))
