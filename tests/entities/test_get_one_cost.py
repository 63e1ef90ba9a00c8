"""What one ``GET /api/entity/{eClass}/{id}`` costs, in statements, and that reading it in
fewer changed nothing of the answer (issue 33 §6).

The statements are counted with a ``before_cursor_execute`` listener through the test
client, on a worker that has seen the caller before (its memory of the caller's grants is
filled, the PAT's last use just written): authentication is one statement, the entity one,
its files one, its events and audit events one; a fifth reads which of the notes and files
its events name the caller may see, only when events name any.
"""
from __future__ import annotations

import base64
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from flask import Flask
from sqlalchemy import select

from labapp.access.grant_sets import actor_for
from labapp.access.visibility import readable
from labapp.db import db
from labapp.model import AuditEvent, Entity, EntityEvent, File, User
from labapp.reading.lookup import to_api
from tests.conftest import ApiClient
from tests.entities.conftest import body_of, save
from tests.helpers.statements import statements

# Authentication, entity, files, events with audit events.
GET_ONE_STATEMENTS = 4
# The same, plus the visibility of the notes and files the events name.
GET_ONE_NAMING_STATEMENTS = 5
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


def test_get_one_with_a_pat_costs_four_statements(
        app: Flask, member: Callable[..., ApiClient], api_as: Callable[..., ApiClient]) -> None:
    member("alice")
    pat = api_as("alice", "pat")
    sample = _sample_with_history(pat)
    seen = _statements_of_get(app, pat, f"/api/entity/Sample/{sample}")
    assert len(seen) <= GET_ONE_STATEMENTS, heads(seen)


def test_get_one_with_events_naming_notes_and_files_costs_five(
        app: Flask, member: Callable[..., ApiClient], api_as: Callable[..., ApiClient]) -> None:
    member("alice")
    pat = api_as("alice", "pat")
    sample = _with_note_and_file(pat)
    seen = _statements_of_get(app, pat, f"/api/entity/Sample/{sample}")
    assert len(seen) <= GET_ONE_NAMING_STATEMENTS, heads(seen)


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
