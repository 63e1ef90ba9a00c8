"""What one ``GET /api/entity/{eClass}/{id}`` costs, in statements, and that reading it in
fewer changed nothing of the answer (issue 33 §6).

The statements are counted with a ``before_cursor_execute`` listener through the test
client, on a worker that has seen the caller before (its memory of the caller's grants is
filled, the PAT's last use just written): authentication is one statement, the entity with
its visible files one, its events and audit events one; a fourth reads which of the notes and
files its events name the caller may see, only when events name any.

The entity and its files are read as plain rows by a statement built once per class and
shape of caller (``labapp.access.visibility.ReadRule``); the tests below pin that its
answer is the one the ORM objects gave, whoever asks.
"""
from __future__ import annotations

import base64
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select

from labapp.access.actor import ADMIN, Actor
from labapp.access.grant_sets import actor_for
from labapp.access.visibility import ReadRule, readable
from labapp.db import db
from labapp.entities import loading
from labapp.model import AuditEvent, Entity, EntityEvent, File, User
from labapp.reading.lookup import to_api
from tests.conftest import ApiClient
from tests.entities.conftest import Grants, body_of, save
from tests.helpers.statements import statements

# Authentication, entity with its files, events with audit events.
GET_ONE_STATEMENTS = 3
# The same, plus the visibility of the notes and files the events name.
GET_ONE_NAMING_STATEMENTS = 4
# The test's own transaction is begun before the block; a BEGIN inside it is SQLite's for
# the connection of the look at ``model_state`` (see :func:`counted`).
_TRANSACTION_CONTROL = ("SAVEPOINT", "RELEASE", "ROLLBACK", "BEGIN")


def counted(app: Flask) -> AbstractContextManager[list[str]]:
    """The statements sent while the block runs, but the savepoints of the test harness and
    the worker's look at ``model_state`` (at most once a second, whichever request comes:
    ``labapp.datamodel.running``, on a connection of its own), which no request kind owns."""
    return statements(app, keep=lambda statement: (
        not statement.lstrip().upper().startswith(_TRANSACTION_CONTROL)
        and "model_state" not in statement))


def heads(seen: list[str]) -> str:
    """The start of each statement, short enough for pytest to show them all."""
    return " | ".join(" ".join(statement.split())[:90] for statement in seen)


def _statements_of_get(app: Flask, api: ApiClient, path: str) -> list[str]:
    body_of(api.get(path), 200)  # the worker meets the caller; the PAT's use is written
    with counted(app) as seen:
        body_of(api.get(path), 200)
    return seen


def _sample_with_history(api: ApiClient) -> str:
    sample = save(api, {"eClass": "Sample", "name": "Tube", "amount": 1.5, "unit": "mL"})[0]
    save(api, {"eClass": "Sample", "id": sample["id"], "amount": 2.5,
               "version": sample["version"]}, status=200)
    return str(sample["id"])


def test_get_one_with_a_pat_costs_three_statements(
        app: Flask, member: Callable[..., ApiClient], api_as: Callable[..., ApiClient]) -> None:
    member("alice")
    pat = api_as("alice", "pat")
    sample = _sample_with_history(pat)
    seen = _statements_of_get(app, pat, f"/api/entity/Sample/{sample}")
    assert len(seen) == GET_ONE_STATEMENTS, heads(seen)


def test_get_one_with_events_naming_notes_and_files_costs_four(
        app: Flask, member: Callable[..., ApiClient], api_as: Callable[..., ApiClient]) -> None:
    member("alice")
    pat = api_as("alice", "pat")
    sample = _with_note_and_file(pat)
    seen = _statements_of_get(app, pat, f"/api/entity/Sample/{sample}")
    assert len(seen) == GET_ONE_NAMING_STATEMENTS, heads(seen)


def test_authentication_is_one_statement_for_every_token(
        app: Flask, member: Callable[..., ApiClient], api_as: Callable[..., ApiClient]) -> None:
    """``GET /api/user/pat`` reads one statement of its own: what is left is authentication."""
    member("alice")
    for method in ("pat", "bearer", "cookie"):
        seen = _statements_of_get(app, api_as("alice", method), "/api/user/pat")
        assert len(seen) == 2, f"{method}: {heads(seen)}"


def _with_note_and_file(api: ApiClient) -> str:
    content = base64.b64encode(b"plate reader export").decode()
    sample = save(api, {"eClass": "Sample", "name": "Tube", "amount": 1.5, "unit": "mL",
                        "notes": [{"content": "Thawed once", "type": "Comment"}],
                        "files": [{"name": "reading.txt", "content": content,
                                   "mediaType": "text/plain", "type": "Raw"}]})[0]
    save(api, {"eClass": "Sample", "id": sample["id"], "amount": 2.5,
               "version": sample["version"]}, status=200)
    return str(sample["id"])


def _answer_read_table_by_table(app: Flask, api: ApiClient,
                                entity_id: str) -> tuple[Any, Any]:
    """The answer as it was read before issue 33: the files, the events and the audit
    events each by a statement of its own (events naming a hidden note or file left out)."""
    answer = body_of(api.get(f"/api/entity/Sample/{entity_id}"), 200)
    with app.app_context():
        actor = actor_for(db.session.get(User, "alice"), method="pat")
        files = db.session.scalars(select(File).where(File.subject_id == entity_id,
                                                      readable(actor, File))
                                   .order_by(File.created_utc, File.id))
        events = list(db.session.scalars(select(EntityEvent)
                                          .where(EntityEvent.entity_id == entity_id)
                                          .order_by(EntityEvent.id.desc())))
        named = {e.data.get("id") for e in events if e.kind in ("NoteAdded", "FileAdded")}
        visible = set(db.session.scalars(select(Entity.id).where(
            Entity.id.in_(sorted(n for n in named if n)), readable(actor))))
        audits = db.session.scalars(select(AuditEvent).where(AuditEvent.entity_id == entity_id)
                                    .order_by(AuditEvent.id.desc()))
        expected = {**{key: value for key, value in answer.items()
                       if key not in ("files", "events", "auditEvents")},
                    "files": [to_api(file) for file in files],
                    "events": [{"id": e.id, "kind": e.kind, "userID": e.user_id,
                                "timestampUtc": e.timestamp_utc, "data": e.data}
                               for e in events if e.kind not in ("NoteAdded", "FileAdded")
                               or e.data.get("id") in visible],
                    "auditEvents": [{"id": a.id, "action": a.action, "version": a.version,
                                     "userID": a.user_id, "timestampUtc": a.timestamp_utc,
                                     "changes": a.changes} for a in audits]}
        return app.json.loads(app.json.dumps(expected)), answer


def test_the_answer_holds_what_the_table_by_table_reads_gave(
        app: Flask, member: Callable[..., ApiClient], api_as: Callable[..., ApiClient]) -> None:
    member("alice")
    pat = api_as("alice", "pat")
    sample = _with_note_and_file(pat)
    expected, answer = _answer_read_table_by_table(app, pat, sample)
    assert answer["files"] and answer["events"] and len(answer["auditEvents"]) >= 2
    assert answer == expected


def _file(name: str, **values: Any) -> dict[str, Any]:
    return {"name": name, "content": base64.b64encode(name.encode()).decode(),
            "mediaType": "text/plain", "type": "Raw", **values}


def test_plain_rows_answer_as_the_orm_objects_did_for_every_caller(
        app: Flask, admin: ApiClient, member: Callable[..., ApiClient],
        department: Callable[..., str], project: Callable[..., str], grant: Grants,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A Sample with files of three places — the caller's department, a department they
    may not read, a project they read — and one without files, read by the administrator,
    by a member with a project grant and by one without (to whom the other department's
    sample is 404): the same answers, files hidden and ordered alike."""
    chemistry = department("Chemistry")
    vaccine = project("Vaccine", departmentID=chemistry)
    alice, bob = member("alice"), member("bob")
    grant.project(vaccine, "Read", user="alice")
    tube = save(admin, {"eClass": "Sample", "name": "Tube", "amount": 1.5, "unit": "mL",
                        "attributes": {"lot": 7}, "files": [_file("mine.txt")]})[0]["id"]
    save(admin, {"eClass": "File", "subjectID": tube, "departmentID": chemistry,
                 "name": "hidden.txt", "mediaType": "text/plain"},
         {"eClass": "File", "subjectID": tube, "departmentID": chemistry,
          "projectID": vaccine, "name": "project.txt", "mediaType": "text/plain"})
    bare = save(admin, {"eClass": "Sample", "name": "Bare"})[0]["id"]
    elsewhere = save(admin, {"eClass": "Sample", "name": "Far", "departmentID": chemistry,
                             "projectID": vaccine})[0]["id"]
    reads = [(api, eclass, entity_id) for api in (admin, alice, bob)
             for eclass, entity_id in (("Sample", tube), ("sample", bare),
                                       ("Sample", elsewhere), ("Sample", "SAM99999"),
                                       ("User", "alice"))]

    def answers() -> list[tuple[int, Any]]:
        return [(response.status_code, response.get_json()) for response in (
            api.get(f"/api/entity/{eclass}/{entity_id}") for api, eclass, entity_id in reads)]

    plain = answers()
    # Read through ORM objects, as before issue 33 (the path a class with a computed field
    # still takes).
    monkeypatch.setattr(loading, "_cached_read", lambda _spec, _rule: None)
    assert answers() == plain
    assert [status for status, _ in plain] == [200, 200, 200, 404, 200,
                                               200, 200, 200, 404, 200,
                                               200, 200, 404, 404, 200]
    assert [item["name"] for item in plain[0][1]["files"]] == ["mine.txt", "hidden.txt",
                                                               "project.txt"]
    assert [item["name"] for item in plain[5][1]["files"]] == ["mine.txt", "project.txt"]
    assert [item["name"] for item in plain[10][1]["files"]] == ["mine.txt"]


@pytest.mark.parametrize("shape", ["anonymous", "admin", "department", "department+project"])
def test_the_read_rule_keeps_the_rows_readable_keeps(
        app: Flask, admin: ApiClient, department: Callable[..., str],
        project: Callable[..., str], shape: str) -> None:
    """:class:`ReadRule`'s predicate with the actor's parameters selects exactly the rows
    :func:`readable` selects, for each shape of actor."""
    chemistry = department("Chemistry")
    vaccine = project("Vaccine", departmentID=chemistry)
    save(admin, {"eClass": "Sample", "name": "Near"},
         {"eClass": "Sample", "name": "Far", "departmentID": chemistry},
         {"eClass": "Sample", "name": "Shared", "departmentID": chemistry,
          "projectID": vaccine})
    actor = {"anonymous": Actor(),
             "admin": Actor(user_id="admin", roles=frozenset({ADMIN})),
             "department": Actor(user_id="alice", read_departments=frozenset({"DEP00001"})),
             "department+project": Actor(user_id="alice",
                                         read_departments=frozenset({"DEP00001"}),
                                         read_projects=frozenset({vaccine}))}[shape]
    with app.app_context():
        literal = set(db.session.scalars(select(Entity.id).where(readable(actor))))
        rule = ReadRule.of(actor)
        bound = set(db.session.scalars(select(Entity.id).where(rule.predicate()),
                                       ReadRule.parameters(actor)))
    assert bound == literal
