"""The ids of an import's new rows (issue 33 §3): drawn in a short transaction of their own
just before the commit's one transaction opens, so the commit does not hold its class's
sequence. An entity of the class is created while the commit runs, with an id of its own;
a commit that fails leaves a gap in the sequence, its ids never handed out again
(docs/decisions/import-ids-drawn-apart.md)."""
from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select

from labapp.db import db
from labapp.entities.service import save_batch
from labapp.imports import jobs
from labapp.model import Entity, Sample, Sequence
from labapp.sequences.service import format_value
from tests.conftest import BACKEND
from tests.helpers.importing import commits_held, job_now
from tests.helpers.processes import ADMIN, wait_for
from tests.imports.conftest import actor_of
from tests.imports.uploading import queue_job, run_queued

ROWS = 300  # the import's samples, named C-1 …


def _samples_named(app: Flask, pattern: str) -> set[str]:
    """The ids of the samples whose name is like ``pattern``."""
    with app.app_context():
        return set(db.session.scalars(select(Sample.id).where(Sample.name.like(pattern))))


def _create_sample(app: Flask, name: str) -> tuple[int, Any]:
    """``POST /api/entity`` of one sample as the administrator: the status and the body."""
    response = app.test_client().post("/api/entity", headers=ADMIN, json={
        "entities": [{"eClass": "Sample", "name": name}]})
    return response.status_code, response.get_json()


@pytest.mark.skipif(BACKEND != "postgresql", reason=(
    "on SQLite an import's commit holds the only write lock: no entity can be created "
    "beside it (tests/imports/test_writers_during_commit.py)"))
def test_a_sample_is_created_while_an_import_of_samples_commits(
        fresh_app: Callable[..., Flask]) -> None:
    app = fresh_app(initialised=True)
    job_id = queue_job(app, "Name\n" + "".join(f"C-{number}\n"
                                               for number in range(1, ROWS + 1)), dry_run=False)
    # The hold is let go first when the block ends, so the threads can end.
    with ThreadPoolExecutor(max_workers=2) as threads, commits_held(app) as held:
        importing = threads.submit(run_queued, app)
        wait_for(held.waiting, "the import's commit to write its entities", timeout=120)

        creating = threads.submit(_create_sample, app, "beside the commit")
        # Drawn in the commit's transaction, the id would wait for the commit to end.
        wait_for(creating.done, "the sample to be created while the import commits")
        status, body = creating.result()
        assert status == 201, body
        created = body["entities"][0]["id"]
        assert held.waiting() and job_now(app, job_id).status == "running", \
            "the import still commits"

        held.release()
        assert importing.result() == 1
    ended = job_now(app, job_id)
    assert ended.status == "done", ended.error
    imported = _samples_named(app, "C-%")
    assert len(imported) == ROWS and created not in imported
    assert _samples_named(app, "beside the commit") == {created}


def _sequence_of_samples(app: Flask) -> Sequence:
    with app.app_context():
        sequence = db.session.get(Sequence, "Sample", populate_existing=True)
        assert sequence is not None
        db.session.expunge(sequence)
        return sequence


def _sample_ids(sequence: Sequence, first: int, count: int) -> list[str]:
    """The ids ``count`` draws from the samples' sequence give from number ``first`` on."""
    return [format_value(sequence.prefix, number, sequence.min_digits)
            for number in range(first, first + count)]


def _entities(app: Flask, ids: list[str]) -> set[str]:
    with app.app_context():
        return set(db.session.scalars(select(Entity.id).where(Entity.id.in_(ids))))


def test_a_failed_commit_leaves_a_gap_and_its_ids_are_never_handed_out(
        fresh_app: Callable[..., Flask], monkeypatch: pytest.MonkeyPatch) -> None:
    # A database of its own: the draw commits apart from the commit's transaction, which a
    # test's rolled-back connection would fold into one.
    app = fresh_app(initialised=True)
    text = "Name,Barcode\nG-1,G-1\nG-2,G-2\nG-3,G-3\n"
    before = _sequence_of_samples(app)
    real_commit = jobs.commit_import

    def racing(actor: Any, plan: Any, **options: Any) -> list[str]:
        """Another request takes the third row's barcode between the dry run and the
        commit, in the commit's transaction (which rolls it back with the rest)."""
        save_batch(actor_of("admin"), [{"eClass": "Sample", "name": "Thief",
                                        "barcode": "G-3"}])
        return real_commit(actor, plan, **options)

    monkeypatch.setattr(jobs, "commit_import", racing)
    failed = queue_job(app, text, dry_run=False)
    run_queued(app)
    assert job_now(app, failed).status == "failed"
    monkeypatch.undo()

    drawn = _sample_ids(before, before.next_value, 3)  # by the failed commit
    assert _sequence_of_samples(app).next_value == before.next_value + 3
    assert _entities(app, drawn) == set(), "nothing of the failed commit was written"

    status, body = _create_sample(app, "after the failure")
    assert status == 201, body
    assert body["entities"][0]["id"] == _sample_ids(before, before.next_value + 3, 1)[0]
    done = queue_job(app, text, dry_run=False)
    run_queued(app)
    assert job_now(app, done).status == "done"
    assert _samples_named(app, "G-%") == set(_sample_ids(before, before.next_value + 4, 3))
