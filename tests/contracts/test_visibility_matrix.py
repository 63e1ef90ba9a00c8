"""The visibility matrix: every caller × every read and write path, against the rule of
decisions §5 as an independent oracle computes it (``tests/contracts/visibility/``).

Each test is one caller on one path and tries every subject of that path, reporting every
disagreement at once. A known bug is carved out of its cell as a single case of its own and
marked ``xfail(strict=True)`` (:data:`KNOWN_BUGS`), so the rest of the cell keeps guarding and
the case fails loudly once the bug is fixed.

The worlds are built once per module on new databases with real commits: one that only
the read paths touch, one for the write paths.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select

from labapp.access.actor import ANONYMOUS as ANONYMOUS_ACTOR
from labapp.access.grant_sets import actor_for
from labapp.access.labels import actor_labels
from labapp.access.visibility import readable
from labapp.db import db
from labapp.model import Entity, User
from labapp.search import backend as search_backend
from tests.contracts.visibility import oracle
from tests.contracts.visibility.build import LiveWorld, built_world
from tests.contracts.visibility.item_pages import WRITE_PATHS as ITEM_PAGE_WRITE_PATHS
from tests.contracts.visibility.paths import MatrixPath
from tests.contracts.visibility.reads import READ_PATHS
from tests.contracts.visibility.storage import WRITE_PATHS as STORAGE_WRITE_PATHS
from tests.contracts.visibility.world import ANONYMOUS, CALLERS, ENTITIES
from tests.contracts.visibility.writes import WRITE_PATHS as ENTITY_WRITE_PATHS

# /api/storage (issue 11); check-in and check-out from a sample's page (issue 19)
WRITE_PATHS = ENTITY_WRITE_PATHS + STORAGE_WRITE_PATHS + ITEM_PAGE_WRITE_PATHS

# (path, caller, subject) → why the API disagrees with the rule: the file and function to fix.
# Each entry becomes a single case marked xfail(strict=True), so it fails once the bug is
# fixed and the entry must go. For example:
#   ("clone", "alice", "S-A-P2"): "labapp/entities/service.py clone: the copied projectID "
#                                 "PRJ-2, invisible to alice, is re-checked as input (400)",
KNOWN_BUGS: dict[tuple[str, str, str], str] = {}


@pytest.fixture(scope="module")
def read_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveWorld]:
    with built_world(tmp_path_factory.mktemp("matrix-read"), frozen=True) as live:
        yield live


@pytest.fixture(scope="module")
def write_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveWorld]:
    with built_world(tmp_path_factory.mktemp("matrix-write"), frozen=False) as live:
        yield live


def _cells(paths: tuple[MatrixPath, ...]) -> Iterator[Any]:
    for path in paths:
        for caller in CALLERS:
            known = {subject: reason for (name, who, subject), reason in KNOWN_BUGS.items()
                     if (name, who) == (path.name, caller)}
            yield pytest.param(path, caller, tuple(s for s in path.subjects if s not in known),
                               id=f"{caller}-{path.name}")
            for subject, reason in known.items():
                yield pytest.param(path, caller, (subject,), id=f"{caller}-{path.name}-{subject}",
                                   marks=pytest.mark.xfail(strict=True, reason=reason))


def _shown(expected: Any, actual: Any) -> str:
    if isinstance(expected, frozenset) and isinstance(actual, frozenset):
        return (f"missing {sorted(expected - actual)}, unexpected {sorted(actual - expected)}")
    return f"expected {expected!r}, got {actual!r}"


def check(live: LiveWorld, path: MatrixPath, caller: str, subjects: tuple[str, ...]) -> None:
    """Every subject of ``path`` as ``caller``: the outcome is exactly what the rule allows."""
    authenticated = oracle.reach(caller) is not None
    wrong = []
    for subject in subjects:
        expected = path.expect(caller, subject) if authenticated else 401
        actual = path.observe(live, caller, subject)
        if actual != expected:
            wrong.append(f"{subject}: {_shown(expected, actual)}")
    assert not wrong, f"{caller} on {path.name}:\n  " + "\n  ".join(wrong)


def test_known_bugs_name_real_cases() -> None:
    paths = {path.name: path for path in READ_PATHS + WRITE_PATHS}
    for name, caller, subject in KNOWN_BUGS:
        assert caller in CALLERS and subject in paths[name].subjects, (name, caller, subject)


def test_the_oracle_reads_the_grants_as_the_table_says() -> None:
    """The oracle's reach of each caller, written out by hand (see the world's docstring)."""
    table = {  # caller: (write departments, read-only departments, write projects, read-only)
        "dm": ({"DEP-A"}, set(), set(), set()),
        "alice": ({"DEP-A"}, set(), set(), set()),
        "bob": ({"DEP-B", "DEP00001"}, {"DEP-C"}, set(), set()),
        "dept_user": ({"DEP-C"}, set(), {"PRJ-2"}, set()),
        "carol": ({"DEP-C", "DEP-D"}, set(), {"PRJ-1", "PRJ-2"}, set()),
        "pat_user": ({"DEP-D"}, set(), set(), {"PRJ-1"}),
        "reader": ({"DEP-D"}, {"DEP-B"}, set(), set()),
    }
    for caller, (write_d, read_d, write_p, read_p) in table.items():
        reach = oracle.reach(caller)
        assert not reach.admin
        assert (reach.write_departments, reach.read_departments - reach.write_departments,
                reach.write_projects, reach.read_projects - reach.write_projects) == (
            write_d, read_d, write_p, read_p), caller
    assert oracle.reach("admin").admin
    assert oracle.reach("inactive") is None and oracle.reach("anonymous") is None


def test_the_world_is_built_as_defined(read_world: LiveWorld) -> None:
    """The oracle's input is right: every entity is where the definition says, as the
    administrator sees it. (That the world holds nothing else is the admin's ``list`` cell.)"""
    wrong = []
    for entity in ENTITIES:
        status, body = read_world.get_json("admin", f"/api/entity/{entity.eclass}/"
                                                    f"{read_world.id(entity.key)}")
        placed = (body.get("departmentID"), body.get("projectID")) if status == 200 else status
        if placed != (entity.department, entity.project):
            wrong.append(f"{entity.key}: {placed} instead of "
                         f"{(entity.department, entity.project)}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize(("path", "caller", "subjects"), list(_cells(READ_PATHS)))
def test_read_path(read_world: LiveWorld, path: MatrixPath, caller: str,
                   subjects: tuple[str, ...]) -> None:
    check(read_world, path, caller, subjects)


@pytest.mark.parametrize(("path", "caller", "subjects"), list(_cells(WRITE_PATHS)))
def test_write_path(write_world: LiveWorld, path: MatrixPath, caller: str,
                    subjects: tuple[str, ...]) -> None:
    check(write_world, path, caller, subjects)


def test_search_and_sql_visibility_agree_for_every_caller(read_world: LiveWorld) -> None:
    """The index's access labels (labapp/access/labels.py) let each caller see exactly the
    rows the SQL predicate lets them read — checked on the index itself, not through the
    API (which also re-reads every hit through the SQL predicate)."""
    with read_world.app.app_context():
        for caller in CALLERS:
            user = db.session.get(User, caller)
            actor = ANONYMOUS_ACTOR if user is None else actor_for(user, method="bearer")
            rows = set(db.session.scalars(select(Entity.id).where(readable(actor))))
            documents = search_backend.current().document_ids(actor_labels(actor))
            assert documents == rows, (caller, sorted(documents ^ rows))
            assert rows or caller == ANONYMOUS
