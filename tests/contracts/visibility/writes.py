"""The write paths: exactly the writes the rule allows succeed, and they put what they create
where the rule says."""
from __future__ import annotations

from collections.abc import Callable
from io import BytesIO
from typing import Any

from tests.contracts.visibility import oracle
from tests.contracts.visibility.alerts import ALERT_WRITE_PATHS
from tests.contracts.visibility.boards import BOARD_WRITE_PATHS
from tests.contracts.visibility.build import LiveWorld, closed
from tests.contracts.visibility.datamodel import DATAMODEL_WRITE_PATHS
from tests.contracts.visibility.exports import EXPORT_WRITE_PATHS
from tests.contracts.visibility.imports import IMPORT_WRITE_PATHS
from tests.contracts.visibility.paths import (
    SELF,
    MatrixPath,
    Outcome,
    created,
    entity_url,
    hidden_like_unknown,
)
from tests.contracts.visibility.savedviews import SAVED_VIEW_WRITE_PATHS
from tests.contracts.visibility.sign_ins import SIGN_IN_WRITE_PATHS
from tests.contracts.visibility.webhooks import WEBHOOK_WRITE_PATHS
from tests.contracts.visibility.world import (
    ENTITY,
    KEYS,
    PASSWORD,
    USER_BY_ID,
    EntityDef,
)


def update(live: LiveWorld, caller: str, key: str) -> Outcome:
    """Change one attribute of an existing entity (never where it is)."""
    item = {"eClass": ENTITY[key].eclass, "id": live.id(key),
            "attributes": {f"touchedBy_{caller}": True}}
    return live.client(caller).post("/api/entity", json={"entities": [item]}).status_code


def expect_update(caller: str, key: str) -> Outcome:
    return {oracle.WRITE: 200, oracle.READ: 403, None: 404}[oracle.access(caller, ENTITY[key])]


# Where a new Sample is put: (departmentID, projectID); HOME sends neither.
HOME = "home"
TARGETS: dict[str, tuple[str | None, str | None]] = {
    "none": (None, None), "DEP00001": ("DEP00001", None), "DEP-A": ("DEP-A", None),
    "DEP-B": ("DEP-B", None), "DEP-C": ("DEP-C", None), "DEP-D": ("DEP-D", None),
    "PRJ-1": (None, "PRJ-1"), "PRJ-2": (None, "PRJ-2"), "DEP-A+PRJ-2": ("DEP-A", "PRJ-2"),
    "DEP-B+PRJ-1": ("DEP-B", "PRJ-1"), "DEP-C+PRJ-1": ("DEP-C", "PRJ-1"),
    "DEP-D+PRJ-2": ("DEP-D", "PRJ-2"),
}


def create(live: LiveWorld, caller: str, target: str) -> Outcome:
    item: dict[str, Any] = {"eClass": "Sample"}
    if target != HOME:
        item["departmentID"], item["projectID"] = TARGETS[target]
    return created(live.client(caller).post("/api/entity", json={"entities": [item]}))


def expect_create(caller: str, target: str) -> Outcome:
    if target == HOME:
        return 201, USER_BY_ID[caller].home, None
    department, project = TARGETS[target]
    if project is not None and not oracle.visible(caller, project):
        return 400  # a reference to an invisible entity is answered like an unknown one
    return (201, department, project) if oracle.may_write_into(caller, department, project) \
        else 403


CLASS_ITEMS: dict[str, Callable[[str], dict[str, Any]]] = {
    "Department": lambda caller: {"eClass": "Department", "name": f"by {caller}"},
    "Project@home": lambda caller: {"eClass": "Project"},
    "Project@DEP-B": lambda caller: {"eClass": "Project", "departmentID": "DEP-B"},
    "User": lambda caller: {"eClass": "User", "id": f"new-{caller}", "departmentID": "DEP-A",
                            "password": PASSWORD},
}


def create_class(live: LiveWorld, caller: str, label: str) -> Outcome:
    response = live.client(caller).post("/api/entity",
                                        json={"entities": [CLASS_ITEMS[label](caller)]})
    return response.status_code


def expect_create_class(caller: str, label: str) -> Outcome:
    return 201 if oracle.may_create(caller, label.split("@")[0], None, None) else 403


def clone(live: LiveWorld, caller: str, key: str) -> Outcome:
    url = entity_url(live, key)
    response = live.client(caller).post(url, json={})
    if response.status_code == 404:
        return hidden_like_unknown(live, caller, url, live.id(key), response.get_json(),
                                    post=True)
    return created(response, batch=False)


def expect_clone(caller: str, key: str) -> Outcome:
    """A clone is a new entity in the source's department and project (decisions §6)."""
    source = ENTITY[key]
    if not oracle.visible(caller, key):
        return 404
    if source.eclass in {"File", "User"}:
        return 400  # not clonable
    if not oracle.may_create(caller, source.eclass, source.department, source.project):
        return 403
    if source.eclass == "Department":
        return 201, SELF, None
    if source.eclass == "Project":
        return 201, source.department, SELF
    return 201, source.department, source.project


def upload(live: LiveWorld, caller: str, key: str) -> Outcome:
    data = {"subjectID": live.id(key),
            "file": (BytesIO(b"matrix upload"), "upload.txt", "text/plain")}
    return created(closed(live.client(caller).post("/api/file", data=data,
                                                    content_type="multipart/form-data")),
                    batch=False)


def add_note(live: LiveWorld, caller: str, key: str) -> Outcome:
    item = {"eClass": "Note", "subjectID": live.id(key), "content": f"by {caller}"}
    return created(live.client(caller).post("/api/entity", json={"entities": [item]}))


def expect_attach(caller: str, key: str) -> Outcome:
    """A Note or File goes where its subject is; an invisible subject is like an unknown one
    (400), a visible one the caller may not write into is 403."""
    subject = ENTITY[key]
    if not oracle.visible(caller, key):
        return 400
    if not oracle.may_write_into(caller, subject.department, subject.project):
        return 403
    return 201, subject.department, subject.project


def move(live: LiveWorld, caller: str, label: str) -> Outcome:
    """The admin puts a new Sample at the move's source; the caller updates its
    ``departmentID`` and ``projectID`` to the destination."""
    source, destination = (TARGETS[part] for part in label.split(">"))
    made = live.client("admin").post("/api/entity", json={"entities": [{
        "eClass": "Sample", "departmentID": source[0], "projectID": source[1]}]})
    assert made.status_code == 201, made.get_data(as_text=True)
    item = {"eClass": "Sample", "id": made.get_json()["entities"][0]["id"],
            "departmentID": destination[0], "projectID": destination[1]}
    response = live.client(caller).post("/api/entity", json={"entities": [item]})
    if response.status_code != 200:
        return response.status_code
    moved = response.get_json()["entities"][0]
    return 200, moved["departmentID"], moved["projectID"]


def expect_move(caller: str, label: str) -> Outcome:
    """Moving needs Write on the entity where it is and on where it goes; a destination
    project the caller cannot see is an unknown reference (400)."""
    source, destination = (TARGETS[part] for part in label.split(">"))
    held = oracle.access(caller, EntityDef("moved", "Sample", *source))
    if held != oracle.WRITE:
        return 404 if held is None else 403
    department, project = destination
    if project not in (None, source[1]) and not oracle.visible(caller, project):
        return 400
    return (200, department, project) if oracle.may_write_into(caller, department, project) \
        else 403


# source>destination, both TARGETS labels.
MOVES = ("DEP-A>DEP-B", "DEP-B>DEP-A", "DEP-C>DEP-D", "PRJ-2>DEP-C", "DEP-D>PRJ-1",
         "DEP-B+PRJ-1>DEP-D+PRJ-2", "DEP-C+PRJ-1>DEP-C")


# Clone and attach subjects: every entity but most users, who all behave alike there (not
# clonable; a note or file on a user goes to their home department): two homes suffice.
ATTACH_SUBJECTS = tuple(key for key in KEYS
                        if ENTITY[key].eclass != "User" or key in {"admin", "bob"})

WRITE_PATHS: tuple[MatrixPath, ...] = (
    MatrixPath("update", KEYS, expect_update, update),
    MatrixPath("update.move", MOVES, expect_move, move),
    MatrixPath("create", (HOME, *TARGETS), expect_create, create),
    MatrixPath("create.class", tuple(CLASS_ITEMS), expect_create_class, create_class),
    MatrixPath("clone", ATTACH_SUBJECTS, expect_clone, clone),
    MatrixPath("file.upload", ATTACH_SUBJECTS, expect_attach, upload),
    MatrixPath("note", ATTACH_SUBJECTS, expect_attach, add_note),
    *BOARD_WRITE_PATHS,  # /api/dashboard, /api/notification (issue 12)
    *SAVED_VIEW_WRITE_PATHS,  # /api/saved-view (issue 21)
    *ALERT_WRITE_PATHS,  # /api/alert-rule (issue 23)
    *WEBHOOK_WRITE_PATHS,  # /api/webhook (issue 36)
    *EXPORT_WRITE_PATHS,  # /api/sync/save (issue 14)
    *IMPORT_WRITE_PATHS,  # /api/import (issue 22)
    *DATAMODEL_WRITE_PATHS,  # /api/datamodel, /api/sync (issue 14)
    *SIGN_IN_WRITE_PATHS,  # /api/auth/signins, /api/user/{id}/secondFactor (issue 35)
)
