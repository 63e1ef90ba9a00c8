"""The durable queue: written in the transaction of the change (by triggers, so Core inserts
count), drained after the commit, kept when the index is missing; a missing or damaged index
is 503 with the rebuild to run, and the CLI rebuilds it and reports its state."""
from __future__ import annotations

import shutil
from collections.abc import Callable

import pytest
from flask import Flask
from flask.testing import FlaskCliRunner
from sqlalchemy import func, insert, select

from labapp.db import db, transaction
from labapp.model import Entity, Sample, SearchQueue
from labapp.search.indexer import index_path
from tests.conftest import ApiClient
from tests.contracts.problem import assert_problem
from tests.entities.conftest import save
from tests.helpers.processes import ADMIN
from tests.helpers.searching import client_found, client_post, entity_row, queued
from tests.search.conftest import found


@pytest.mark.usefixtures("search_backend")
def test_a_rolled_back_change_queues_nothing(app: Flask) -> None:
    with app.app_context():
        with pytest.raises(RuntimeError), transaction() as session:
            session.execute(insert(Entity.__table__), [entity_row("Q-ROLLED")])
            assert db.session.scalar(select(func.count()).select_from(SearchQueue)) == 1
            raise RuntimeError("rejected")
    assert queued(app) == []


@pytest.mark.usefixtures("search_backend")
def test_a_core_insert_is_queued_with_it_and_drained_after_the_commit(
        app: Flask, admin: ApiClient) -> None:
    with app.app_context(), transaction() as session:
        session.execute(insert(Entity.__table__), [entity_row("Q-CORE-1"), entity_row("Q-CORE-2")])
        session.execute(insert(Sample.__table__), [{"id": "Q-CORE-1"}, {"id": "Q-CORE-2"}])
    assert queued(app) == []
    assert set(found(admin, "fulltext/core")) == {"Q-CORE-1", "Q-CORE-2"}


def test_queue_ids_are_never_reused_once_the_queue_empties(app: Flask) -> None:
    """A drain deletes the rows it indexed by id after its index commit; an id handed out
    again in between would make it delete a newer, unindexed change."""
    ids = []
    for entity_id in ("Q-REUSE-1", "Q-REUSE-2"):
        with app.app_context(), transaction() as session:
            session.execute(insert(Entity.__table__), [entity_row(entity_id)])
            ids.append(session.scalar(select(SearchQueue.id).where(
                SearchQueue.entity_id == entity_id)))
        assert queued(app) == []
    assert ids[1] > ids[0]


@pytest.mark.usefixtures("search_backend")
def test_a_rejected_batch_leaves_neither_rows_nor_documents(app: Flask,
                                                           admin: ApiClient) -> None:
    response = admin.post("/api/entity", json={"entities": [
        {"eClass": "Sample", "name": "halfway"}, {"eClass": "Sample", "status": "Bogus"}]})
    assert response.status_code == 400
    assert queued(app) == []
    assert found(admin, "fulltext/halfway") == []


def test_without_an_index_search_is_503_and_changes_wait(app: Flask, admin: ApiClient,
                                                         client, runner: FlaskCliRunner) -> None:
    with app.app_context():
        shutil.rmtree(index_path())
    (sample,) = save(admin, {"eClass": "Sample", "name": "waiting"})
    assert sample["id"] in queued(app)
    for path in ("/api/search/fulltext/waiting", "/api/search/waiting",
                 "/api/query/freetext/waiting"):
        body = assert_problem(admin.get(path), 503, "search_index_unavailable")
        assert "flask --app labapp search rebuild" in body["detail"]
    health = client.get("/healthz")
    assert health.status_code == 503
    assert "flask --app labapp search rebuild" in health.get_json()["searchIndex"]
    assert found(admin, "exact/waiting") == [sample["id"]]  # SQL modes still answer

    result = runner.invoke(args=["search", "rebuild"])
    assert result.exit_code == 0, result.output
    assert queued(app) == []
    assert found(admin, "fulltext/waiting") == [sample["id"]]
    assert client.get("/healthz").status_code == 200


def test_a_damaged_index_is_503_until_rebuilt(app: Flask, admin: ApiClient,
                                              runner: FlaskCliRunner) -> None:
    save(admin, {"eClass": "Sample", "name": "damaged"})
    with app.app_context():  # the segments are gone (a damaged TOC leaks a file in Whoosh)
        for item in index_path().iterdir():
            if item.suffix != ".toc" and item.is_file():
                item.unlink()
    assert_problem(admin.get("/api/search/fulltext/damaged"), 503, "search_index_unavailable")
    assert runner.invoke(args=["search", "rebuild"]).exit_code == 0
    assert len(found(admin, "fulltext/damaged")) == 1


def test_status_reports_queue_documents_size_and_last_commit(
        app: Flask, admin: ApiClient, runner: FlaskCliRunner) -> None:
    save(admin, {"eClass": "Sample", "name": "counted"})
    result = runner.invoke(args=["search", "status"])
    assert result.exit_code == 0, result.output
    with app.app_context():
        entities = db.session.scalar(select(func.count()).select_from(Entity))
    lines = result.output.splitlines()
    assert lines[0] == "queue: 0 changes waiting"
    assert lines[1] == "worker: not running"
    assert lines[2] == f"documents: {entities}"
    assert lines[3].startswith("index size: ") and lines[4].startswith("last indexed: 20")
    assert lines[5].startswith("backend: whoosh (index folder ")


@pytest.mark.parametrize("drain", ["after-commit", "next-request", "before-search"])
def test_when_a_web_process_without_a_worker_indexes(fresh_app: Callable[..., Flask],
                                                     drain: str) -> None:
    """``SEARCH_DRAIN``: after the commit of each change, at the start of the next request
    of any kind, or at the start of the next search request only; a search finds the change
    with each."""
    application = fresh_app(initialised=True, SEARCH_DRAIN=drain)
    client_found(application, "nothing")  # the process's first request drains what waits
    client_post(application, "walrus one")
    after_write = queued(application)
    plain = application.test_client().get("/api/entity/Sample?$top=1", headers=ADMIN)
    assert plain.status_code == 200
    after_plain_request = queued(application)
    assert client_found(application, "walrus") == {"walrus one"}
    assert queued(application) == []
    assert (bool(after_write), bool(after_plain_request)) == {
        "after-commit": (False, False), "next-request": (True, False),
        "before-search": (True, True)}[drain]
