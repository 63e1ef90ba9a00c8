"""Every test that touches a database carries the ``db`` mark, so the PostgreSQL pass (which
runs ``-m db`` only) cannot lose a new database test. Each unmarked test's function and
fixtures are read for a way to a database: those of this run when it collected the whole
suite (``make test``: each xdist worker collects everything), else those of a collection of
the whole suite in a process of its own."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.database_audit import unmarked_database_users

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"


def _whole_suite_collected(session: pytest.Session) -> bool:
    """Whether this run collected the whole suite and kept every test (no ``-k``, ``-m``,
    ``--deselect`` or ``--lf``): then its items are all the tests there are."""
    options = session.config.option
    named = {Path(argument.split("::")[0]).resolve() for argument in session.config.args}
    narrowed = (options.keyword or options.markexpr or getattr(options, "deselect", None)
                or getattr(options, "lf", False))
    return not narrowed and named <= {ROOT, TESTS}


def _audit_in_a_process(tmp_path: Path) -> dict[str, list[str]]:
    audit = tmp_path / "audit.json"
    environment = {**os.environ, "LABAPP_DATABASE_AUDIT": str(audit), "PYTHONPATH": str(ROOT)}
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "-p", "no:xdist", "-p", "tests.helpers.database_audit", "-m", "not db", "tests"],
        cwd=ROOT, env=environment, capture_output=True, text=True, timeout=600)
    assert collected.returncode == 0, collected.stdout[-2000:] + collected.stderr[-2000:]
    findings: dict[str, list[str]] = json.loads(audit.read_text())
    return findings


def test_every_test_reaching_a_database_is_marked_db(request: pytest.FixtureRequest,
                                                     tmp_path: Path) -> None:
    session = request.session
    if _whole_suite_collected(session):
        findings = {item.nodeid: found for item in session.items
                    if (found := unmarked_database_users(item))}
    else:
        findings = _audit_in_a_process(tmp_path)
    assert findings == {}, (
        "these tests reach a database but are not marked db (add the fixture to "
        "DATABASE_FIXTURES in tests/helpers/database_marker.py, or mark them db): "
        + json.dumps(findings, indent=1))
