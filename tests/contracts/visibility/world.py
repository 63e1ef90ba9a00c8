"""The world of the visibility matrix, as plain data: departments, projects, users, grants and
entities spread over them.

It is static so that the test parameters (caller × path × subject) are known at collection
time; :mod:`.build` makes it real on a new database. Who reaches what (derived by
:mod:`.oracle`, pinned by ``test_the_oracle_reads_the_grants_as_the_table_says``):

=========  ===========  ==============================================================
caller     home         reach (W = write, R = read only)
=========  ===========  ==============================================================
admin      DEP00001     ADMIN: everything
dm         DEP-A        W DEP-A (DATA_MANAGER adds no visibility)
alice      DEP-A        W DEP-A
inactive   DEP-A        deactivated after logging in: 401 everywhere
bob        DEP-B        W DEP-B; via DEP-B's grants W DEP00001, R DEP-C
dept_user  DEP-C        W DEP-C; via DEP-C's grant W PRJ-2
carol      DEP-C        W DEP-C; via DEP-C W PRJ-2; her own grants W DEP-D, W PRJ-1
pat_user   DEP-D        W DEP-D; R PRJ-1 (direct project grant)
reader     DEP-D        W DEP-D (a Read grant on it lowers nothing); R DEP-B
dir_user   DEP-B        a directory (LDAP) user, created at first sign-in: as bob, without
                        his own grants (only where slapd runs: tests/helpers/directory.py)
anonymous  -            401 everywhere
=========  ===========  ==============================================================
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.helpers.directory import directory_runs

HOME_OF_ADMIN = "DEP00001"  # made by ``flask init``, with the admin
PASSWORD = "matrix-password-1"
ANONYMOUS = "anonymous"


@dataclass(frozen=True)
class UserDef:
    """A user; ``source`` is where they sign in: ``local`` (made by the admin's batch) or
    ``ldap`` (in the world's directory, made here by their first sign-in)."""

    id: str
    home: str
    roles: tuple[str, ...] = ()
    active: bool = True
    source: str = "local"


@dataclass(frozen=True)
class GrantDef:
    """Read or Write on a department or project, to one user or to a whole department."""

    on: str  # "department" or "project"
    target: str
    access: str  # "Read" or "Write"
    user: str | None = None
    department: str | None = None


@dataclass(frozen=True)
class EntityDef:
    """One entity and where it must end up (``department``/``project``: the oracle's input).

    ``made_by``: ``init`` (``flask init`` made it), ``batch`` (the admin's world batch, with
    ``payload`` as its properties), ``files`` (the ``files`` property of its subject's batch
    item), ``upload`` (``POST /api/file`` with its subject) or ``sign-in`` (a directory
    user's first sign-in). Files get generated ids, so
    their key is their unique name. ``moved``: the admin moves it to ``department``/``project``
    afterwards, away from its subject's.
    """

    key: str
    eclass: str
    department: str | None
    project: str | None
    made_by: str = "batch"
    payload: dict[str, Any] = field(default_factory=dict)
    subject: str | None = None
    moved: bool = False


USERS: tuple[UserDef, ...] = (
    UserDef("admin", HOME_OF_ADMIN, ("ADMIN",)),
    UserDef("dm", "DEP-A", ("DATA_MANAGER",)),
    UserDef("alice", "DEP-A"),
    UserDef("bob", "DEP-B"),
    UserDef("dept_user", "DEP-C"),
    UserDef("carol", "DEP-C"),
    UserDef("pat_user", "DEP-D"),
    UserDef("reader", "DEP-D"),
    UserDef("inactive", "DEP-A", active=False),
    *((UserDef("dir_user", "DEP-B", source="ldap"),) if directory_runs() else ()),
)
USER_BY_ID = {user.id: user for user in USERS}
CALLERS: tuple[str, ...] = tuple(user.id for user in USERS) + (ANONYMOUS,)

DEPARTMENTS = (HOME_OF_ADMIN, "DEP-A", "DEP-B", "DEP-C", "DEP-D")
PROJECT_OWNERS = {"PRJ-1": "DEP-A", "PRJ-2": "DEP-B"}

GRANTS: tuple[GrantDef, ...] = (
    GrantDef("project", "PRJ-1", "Read", user="pat_user"),
    GrantDef("project", "PRJ-1", "Write", user="carol"),
    GrantDef("project", "PRJ-2", "Write", department="DEP-C"),
    GrantDef("department", "DEP-B", "Read", user="reader"),
    GrantDef("department", "DEP-D", "Read", user="reader"),
    GrantDef("department", "DEP-D", "Write", user="carol"),
    GrantDef("department", "DEP-C", "Read", department="DEP-B"),
    GrantDef("department", HOME_OF_ADMIN, "Write", department="DEP-B"),
)


def _placed(key: str, eclass: str, department: str | None, project: str | None,
            **payload: Any) -> EntityDef:
    """An entity created with explicit ``departmentID`` and ``projectID``."""
    return EntityDef(key, eclass, department, project,
                     payload={"departmentID": department, "projectID": project, **payload})


def _note(key: str, subject: str, department: str | None, project: str | None,
          **payload: Any) -> EntityDef:
    return EntityDef(key, "Note", department, project, subject=subject,
                     payload={"subjectID": subject, "content": f"note {key}", **payload})


def _file(key: str, subject: str | None, department: str | None, project: str | None,
          made_by: str = "files", moved: bool = False) -> EntityDef:
    return EntityDef(key, "File", department, project, made_by=made_by, subject=subject,
                     moved=moved)


_DIRECTORY: tuple[EntityDef, ...] = (
    *(EntityDef(department, "Department", department, None,
                made_by="init" if department == HOME_OF_ADMIN else "batch",
                payload={"name": f"Department {department}"})
      for department in DEPARTMENTS),
    *(EntityDef(project, "Project", owner, project, payload={"departmentID": owner})
      for project, owner in PROJECT_OWNERS.items()),
    *(EntityDef(user.id, "User", user.home, None,
                made_by=("init" if user.id == "admin" else
                         "sign-in" if user.source == "ldap" else "batch"),
                payload={"departmentID": user.home, "name": user.id.title(),
                         "password": PASSWORD})
      for user in USERS),
)

_LAB: tuple[EntityDef, ...] = (
    _placed("S-0", "Sample", HOME_OF_ADMIN, None),
    _placed("S-A", "Sample", "DEP-A", None),
    _placed("S-A-P1", "Sample", "DEP-A", "PRJ-1"),
    _placed("S-A-P2", "Sample", "DEP-A", "PRJ-2"),
    _placed("S-B", "Sample", "DEP-B", None),
    _placed("S-B-P1", "Sample", "DEP-B", "PRJ-1"),
    _placed("S-B-P2", "Sample", "DEP-B", "PRJ-2"),
    _placed("S-C", "Sample", "DEP-C", None),
    _placed("S-C-P1", "Sample", "DEP-C", "PRJ-1"),
    _placed("S-D", "Sample", "DEP-D", None),
    _placed("S-X-P2", "Sample", None, "PRJ-2"),
    _placed("S-X", "Sample", None, None),
    # Inherits both from its parent.
    EntityDef("S-KID-OF-A-P1", "Sample", "DEP-A", "PRJ-1", payload={"parentID": "S-A-P1"}),
    # Placed in DEP-C explicitly, under a parent only DEP-B's readers see.
    _placed("S-C-KID-OF-B", "Sample", "DEP-C", None, parentID="S-B"),
    _placed("E-A", "Experiment", "DEP-A", None),
    _placed("E-B-P1", "Experiment", "DEP-B", "PRJ-1"),
    _placed("E-C-P2", "Experiment", "DEP-C", "PRJ-2"),
    _placed("E-X-P1", "Experiment", None, "PRJ-1"),
    # Storage (issue 11): a tree of locations over several departments, items stored in it.
    _placed("L-0", "Location", HOME_OF_ADMIN, None),
    _placed("L-A", "Location", "DEP-A", None, parentID="L-0"),
    _placed("L-B-P1", "Location", "DEP-B", "PRJ-1", parentID="L-A"),
    _placed("L-C", "Location", "DEP-C", None, parentID="L-B-P1"),
    _placed("L-X-P2", "Location", None, "PRJ-2"),
    _note("N-S-A", "S-A", "DEP-A", None),
    _note("N-S-B-P2", "S-B-P2", "DEP-B", "PRJ-2"),
    _note("N-E-X-P1", "E-X-P1", None, "PRJ-1"),
    # A note on S-A that only DEP-B sees.
    _note("N-S-A-IN-B", "S-A", "DEP-B", None, departmentID="DEP-B", projectID=None),
    _file("F-S-A", "S-A", "DEP-A", None),
    _file("F-S-A-MOVED-TO-B", "S-A", "DEP-B", None, moved=True),
    _file("F-S-B-P2", "S-B-P2", "DEP-B", "PRJ-2"),
    _file("F-S-X-P2", "S-X-P2", None, "PRJ-2"),
    _file("F-S-C-P1", "S-C-P1", "DEP-C", "PRJ-1", made_by="upload"),
    _file("F-LOOSE", None, HOME_OF_ADMIN, None, made_by="upload"),
)

ENTITIES: tuple[EntityDef, ...] = _DIRECTORY + _LAB
# Storage: the admin checks these items into these locations once the world is made.
STORED_IN: dict[str, str] = {"S-A": "L-A", "S-B": "L-A", "S-C-P1": "L-A", "S-X": "L-B-P1",
                             "S-D": "L-C"}
ENTITY = {entity.key: entity for entity in ENTITIES}
KEYS: tuple[str, ...] = tuple(entity.key for entity in ENTITIES)
FILES: tuple[str, ...] = tuple(entity.key for entity in ENTITIES if entity.eclass == "File")
