"""Reads never take the write lock (issue 20 §1): every GET of the OpenAPI document and every
page runs its units of work as reads, unless its route is declared as writing.

The statements the database receives are traced on the application's engine while each GET
is served to a signed-in administrator, with path parameters naming real rows of a small lab
(:mod:`tests.contracts.fuzz_lab`). A GET fails the test when it begins ``BEGIN IMMEDIATE``
(SQLite's write lock), runs INSERT, UPDATE or DELETE, or answers 5xx (a read unit that tried to
write raises :class:`labapp.db.ReadUnitWrote`). The few GET routes that do write are declared
with ``@writes`` and listed here, so a new one is a decision, not an accident. On PostgreSQL
every statement of a GET whose view runs in a read unit, authentication's included, runs in
one REPEATABLE READ snapshot.
"""
from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from psycopg import IsolationLevel
from sqlalchemy import event
from sqlalchemy.orm import Session

from labapp.db import db
from labapp.imports import jobs as import_jobs
from labapp.web.units import declared_unit, opens_own
from tests.conftest import ADMIN_PASSWORD, BACKEND, basic_header, csrf_of, login
from tests.contracts.fuzz_lab import FuzzLab, fuzz_lab

# GET routes that write, each for a reason of its own.
WRITING_GETS = {
    "notification_api.mark_all_as_seen",  # the API's name says it: mark every one Seen
    "notification_views.open_subject",  # opening a notification marks it Read
    "oidc_views.oidc_callback",  # a provider's answer logs the user in (or creates them)
    "oidc_views.oidc_start",  # an unreachable provider is a refusal the sign-in log keeps
}
_ARGUMENT = re.compile(r"<(?:([^<>:]*):)?(\w+)>")
_WRITES = re.compile(r"\s*(INSERT|UPDATE|DELETE|BEGIN IMMEDIATE)\b", re.IGNORECASE)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FuzzLab]:
    """A lab in a database of its own, whose sessions really commit (no test transaction)."""
    yield from fuzz_lab(tmp_path_factory.mktemp("read-units"))


@pytest.fixture(scope="module")
def browser(lab: FuzzLab) -> FlaskClient:
    """The administrator's browser, signed in by cookie, with a dashboard and a
    notification to look at."""
    client = lab.app.test_client()
    login(client, "admin", ADMIN_PASSWORD)
    assert client.get("/").status_code == 200  # the first visit makes the starter dashboard
    return client


class Trace:
    """The statements the engine of an application runs while the trace is on."""

    def __init__(self, app: Flask) -> None:
        with app.app_context():
            self.engine = db.engine
        self.statements: list[str] = []
        # PostgreSQL: the statements of sessions' transactions run below REPEATABLE READ
        # (not those of connections taken from the engine directly, such as the worker's
        # liveness check).
        self.outside_snapshot: list[str] = []
        self._session_connections: set[Any] = set()

    def _record(self, connection: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        self.statements.append(statement)
        driver = connection.connection.dbapi_connection
        if (BACKEND == "postgresql" and connection in self._session_connections
                and driver.isolation_level != IsolationLevel.REPEATABLE_READ):
            self.outside_snapshot.append(statement.strip().split("\n")[0][:80])

    def _session_began(self, _session: Any, _transaction: Any, connection: Any) -> None:
        self._session_connections.add(connection)

    def __enter__(self) -> Trace:
        event.listen(self.engine, "before_cursor_execute", self._record)
        event.listen(Session, "after_begin", self._session_began)
        return self

    def __exit__(self, *_exc: object) -> None:
        event.remove(self.engine, "before_cursor_execute", self._record)
        event.remove(Session, "after_begin", self._session_began)
        self._session_connections.clear()

    def writes(self) -> list[str]:
        """The statements that write or take SQLite's write lock."""
        return [statement.strip().split("\n")[0][:80] for statement in self.statements
                if _WRITES.match(statement)]


def _values(lab: FuzzLab, browser: FlaskClient) -> dict[str, str]:
    """A real value for every path parameter name of the application's GET routes."""
    dashboards = browser.get("/api/dashboard").get_json()
    view = browser.post("/api/saved-view", json={"name": "View", "eClass": "Sample"},
                        headers={"X-CSRF-Token": csrf_of(browser)})
    rule = browser.post("/api/alert-rule", json={
        "name": "Rule", "eClass": "Sample", "recipients": {"userIDs": ["admin"]}},
        headers={"X-CSRF-Token": csrf_of(browser)})
    hook = browser.post("/api/webhook", json={
        "name": "Hook", "url": "https://receiver.example.org/labapp"},
        headers={"X-CSRF-Token": csrf_of(browser)})
    upload = {"file": (BytesIO(b"Name\nImported\n"), "import.csv"), "eClass": "Sample"}
    job = browser.post("/api/import", data=upload, content_type="multipart/form-data",
                       headers={"X-CSRF-Token": csrf_of(browser)})
    held = browser.post("/import", data={**upload, "file": (BytesIO(b"Name\nHeld\n"), "a.csv")},
                        content_type="multipart/form-data",
                        headers={"X-CSRF-Token": csrf_of(browser)})
    with lab.app.app_context():
        import_jobs.upkeep()  # the job's rows and annotated file are there to read
    known = {name: values[0] for name, values in lab.known.items()}
    sample = lab.known["entity_id"][6]
    return {**known, "eclass": "Sample", "entity_id": sample, "dashboard_id": dashboards[0]["id"],
            "index": "0", "term": "Alpha", "area_slug": "departments",
            "target_id": lab.known["department_id"][0], "filename": "none.zip",
            "notification_id": "0" * 32, "path": "missing.txt",
            "job_id": job.get_json()["id"], "token": held.headers["Location"].split("/")[-1],
            "view_id": view.get_json()["id"], "rule_id": rule.get_json()["id"],
            "hook_id": hook.get_json()["id"]}


def _paths(app: Flask, values: dict[str, str]) -> Iterator[tuple[str, str]]:
    """``(endpoint, path)`` of every GET route, its parameters filled in from ``values``."""
    for rule in app.url_map.iter_rules():
        if "GET" not in (rule.methods or ()) or rule.endpoint == "static":
            continue
        yield rule.endpoint, _ARGUMENT.sub(lambda match: values[match.group(2)], rule.rule)


def _openapi_gets(browser: FlaskClient) -> set[str]:
    document = browser.get("/api/openapi.json").get_json()
    return {path for path, item in document["paths"].items() if "get" in item}


def _served(browser: FlaskClient, path: str, trace: Trace, snapshot: bool = False
            ) -> list[str]:
    """What is wrong with serving ``path`` (empty when it read only, and with ``snapshot``
    in one snapshot)."""
    for headers in ({}, {"HX-Request": "true"}):  # the page, then its htmx fragment
        trace.statements.clear()
        trace.outside_snapshot.clear()
        with trace:
            response = browser.get(path, headers=headers)
            response.close()
        problems = [f"{path} wrote: {statement}" for statement in trace.writes()]
        if snapshot:
            problems += [f"{path} read outside its snapshot: {statement}"
                         for statement in trace.outside_snapshot]
        if response.status_code >= 500:
            problems.append(f"{path} answered {response.status_code}")
        if problems:
            return problems
    return []


def test_no_get_takes_the_write_lock(lab: FuzzLab, browser: FlaskClient) -> None:
    values = _values(lab, browser)
    trace = Trace(lab.app)
    reading = [(name, path) for name, path in _paths(lab.app, values)
               if name not in WRITING_GETS]
    documented = _openapi_gets(browser)
    walked = {_ARGUMENT.sub(r"{\2}", rule.rule) for rule in lab.app.url_map.iter_rules()
              if "GET" in (rule.methods or ())}
    assert documented <= walked  # every documented GET is among those walked
    assert len(reading) > 60
    problems = [problem for name, path in reading for problem in _served(
        browser, path, trace, snapshot=not opens_own(lab.app.view_functions[name]))]
    assert problems == []


def test_only_the_listed_gets_declare_writes(lab: FuzzLab) -> None:
    declared = {rule.endpoint for rule in lab.app.url_map.iter_rules()
                if "GET" in (rule.methods or ())
                and declared_unit(lab.app.view_functions[rule.endpoint], "GET") == "write"}
    assert declared == WRITING_GETS


@pytest.mark.skipif(BACKEND != "sqlite", reason="SQLite's write lock")
def test_the_trace_sees_a_get_that_takes_the_write_lock(
        fresh_app: Any, tmp_path: Path) -> None:
    """With ``READ_UNITS`` off every unit writes, as before issue 20: the bell's GET then
    begins ``BEGIN IMMEDIATE``, and the trace above would report it."""
    app = fresh_app(initialised=True, READ_UNITS=False)
    client = app.test_client()
    login(client, "admin", ADMIN_PASSWORD)
    trace = Trace(app)
    assert _served(client, "/notifications/bell", trace) == [
        "/notifications/bell wrote: BEGIN IMMEDIATE"]


def test_a_post_declared_as_reading_takes_no_write_lock(lab: FuzzLab,
                                                        browser: FlaskClient) -> None:
    trace = Trace(lab.app)
    with trace:
        response = browser.post("/api/query/dataset",
                                json=[{"collection": "rows", "eClass": "Sample"}],
                                headers={"X-CSRF-Token": csrf_of(browser)})
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["rows"]
    assert trace.writes() == []
    assert trace.outside_snapshot == []


@contextmanager
def committed_meanwhile(app: Flask, picks: Callable[[str], bool],
                        commit: Callable[[], int]) -> Iterator[list[int]]:
    """Within the block, the first statement of ``app`` that ``picks`` waits for ``commit``
    (another client's request, answering its status) to run to its end in a thread of its
    own, whose statements pass by: the block's ``[status]`` once it ran."""
    statuses: list[int] = []
    engine = Trace(app).engine
    started = threading.Event()

    def wait_for_the_commit(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if started.is_set() or not picks(statement):
            return
        started.set()
        committing = threading.Thread(target=lambda: statuses.append(commit()))
        committing.start()
        committing.join()

    event.listen(engine, "before_cursor_execute", wait_for_the_commit)
    try:
        yield statuses
    finally:
        event.remove(engine, "before_cursor_execute", wait_for_the_commit)


@pytest.mark.skipif(BACKEND != "postgresql", reason="SQLite's read units were one snapshot")
def test_an_entity_and_its_history_are_read_in_one_snapshot(lab: FuzzLab,
                                                            browser: FlaskClient) -> None:
    """An edit committed between the statement that reads a Sample and the one that reads
    its history does not reach the answer. Under READ COMMITTED it did: the edit's audit
    event beside the Sample as it was before the edit."""
    sample = lab.known["entity_id"][6]
    path = f"/api/entity/Sample/{sample}"
    before = browser.get(path).get_json()

    def edit() -> int:
        return lab.app.test_client().post("/api/entity", json={"entities": [
            {"eClass": "Sample", "id": sample, "name": f"{before['name']} edited"}]},
            headers=basic_header("admin", ADMIN_PASSWORD)).status_code

    with committed_meanwhile(lab.app, lambda statement: "FROM audit_event" in statement,
                             edit) as edits:
        during = browser.get(path).get_json()
    after = browser.get(path).get_json()

    assert edits == [200]
    assert during["name"] == before["name"]
    assert during["auditEvents"] == before["auditEvents"]
    assert after["name"] == f"{before['name']} edited"
    assert len(after["auditEvents"]) == len(before["auditEvents"]) + 1


@pytest.mark.skipif(BACKEND != "postgresql", reason="PostgreSQL's isolation levels")
def test_a_pats_first_use_is_written_apart_from_the_snapshot(lab: FuzzLab,
                                                             browser: FlaskClient) -> None:
    """The first GET with a new PAT records its use: that write ends the request's snapshot
    and runs READ COMMITTED (in a snapshot, two requests recording one token's use at once
    would fail on each other's update); the view then reads in a snapshot of its own."""
    created = browser.post("/api/user/pat", json={"name": "snapshot probe"},
                           headers={"X-CSRF-Token": csrf_of(browser)})
    assert created.status_code == 201, created.get_json()
    headers = basic_header("admin", created.get_json()["value"])
    trace = Trace(lab.app)
    with trace:
        answer = lab.app.test_client().get("/api/auth/user", headers=headers)

    assert answer.status_code == 200, answer.get_json()
    assert [statement.split(" SET ")[0] for statement in trace.outside_snapshot] == [
        "UPDATE personal_access_token"]
    with trace:
        assert lab.app.test_client().get("/api/auth/user", headers=headers).status_code == 200
    assert [statement.split(" SET ")[0] for statement in trace.outside_snapshot] == [
        "UPDATE personal_access_token"], "the next use within the minute writes nothing"


def test_an_odata_pages_count_and_rows_are_read_in_one_snapshot(lab: FuzzLab) -> None:
    """A Sample committed between an OData page's ``$count`` and its rows reaches neither:
    the count was read in the view and the rows later, in the streamed body's own
    transaction, so the page could count one row fewer than it held."""
    reader = lab.app.test_client()
    admin = basic_header("admin", ADMIN_PASSWORD)
    path = "/odata/Sample?$count=true&$top=1000&$select=id"
    before = reader.get(path, headers=admin).get_json()
    counted: list[str] = []

    def after_the_count(statement: str) -> bool:
        if statement.startswith("SELECT count(*) AS count_1") and "Sample" in statement:
            counted.append(statement)  # the page's $count; the rows come next
            return False
        return bool(counted)

    def add() -> int:
        return lab.app.test_client().post("/api/entity", json={"entities": [
            {"eClass": "Sample", "name": "Added meanwhile"}]}, headers=admin).status_code

    with committed_meanwhile(lab.app, after_the_count, add) as added:
        during = reader.get(path, headers=admin).get_json()
    after = reader.get(path, headers=admin).get_json()

    assert added == [201]
    assert during["@odata.count"] == len(during["value"]) == len(before["value"])
    assert after["@odata.count"] == len(after["value"]) == len(before["value"]) + 1
