"""The PostgreSQL search backend (labapp/search/postgresql.py, issue 34 §1): documents
written in the transaction of the change, no queue left for a worker, the same hits as the
Whoosh backend, and ``flask search rebuild`` and ``status`` with it. PostgreSQL pass only."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskCliRunner
from sqlalchemy import func, insert, select, text, update

from labapp.access.actor import Actor
from labapp.access.labels import actor_labels
from labapp.db import db, own_read, transaction
from labapp.entities.service import save_batch
from labapp.model import Entity, Sample
from labapp.search import backend, rebuild
from labapp.search.analysis import Document
from labapp.search.index import WhooshBackend
from labapp.search.indexer import all_documents
from labapp.search.postgresql import PostgresBackend, search_statements, tsquery
from labapp.search.service import clauses
from tests.conftest import ApiClient
from tests.databases import BACKEND
from tests.entities.conftest import save
from tests.helpers.searching import client_found, client_post, entity_row, queued
from tests.helpers.statements import statements
from tests.imports.conftest import actor_of
from tests.search.conftest import found

pytestmark = pytest.mark.skipif(BACKEND != "postgresql", reason="PostgreSQL pass only")
# The suite's application searching with this backend (tests/search/conftest.py).
ON_POSTGRESQL = pytest.mark.parametrize("search_backend", ["postgresql"], indirect=True)

TERMS = ["SAM00042", "K-12", "12", "pH7.4", "e. coli", '"e. coli strain"', "β-actin", "cafe",
         "cult*", "sa*", "bc-77*", "lennox 0.42", "buffer culture", "yeast", "plate*",
         '"grown in"', "stain*", "nothing-here", "o'brien", "back\\slash", "a:b", "x&y|z!"]


@pytest.fixture
def corpus(admin: ApiClient) -> list[str]:
    made = save(admin, {
        "eClass": "Sample", "name": "SAM00042 K-12 culture", "barcode": "BC-7781",
        "description": "Grown in pH7.4 buffer; E. coli strain, stained for β-actin at the Café",
        "attributes": {"medium": "LB Lennox", "od600": 0.42}},
        {"eClass": "Sample", "name": "Unrelated plate", "description": "yeast; O'Brien's"},
        {"eClass": "Experiment", "name": "Plate reader run", "description": "a:b x&y|z! "
                                                                            "back\\slash"},
        {"eClass": "Sample", "name": "Culture flask", "notes": [{"content": "grown in LB"}]})
    return [item["id"] for item in made]


@ON_POSTGRESQL
@pytest.mark.usefixtures("search_backend")
def test_a_change_is_searchable_at_its_commit_with_nothing_queued(
        app: Flask, admin: ApiClient) -> None:
    with app.app_context(), transaction() as session:
        session.execute(insert(Entity.__table__), [entity_row("PG-X-1")])
        session.execute(insert(Sample.__table__), [{"id": "PG-X-1"}])
        # In the transaction, before the commit: the queue row the trigger added is there.
        assert queued(app) == ["PG-X-1"]
    assert queued(app) == []  # consumed by the commit itself: no worker, no drain
    assert found(admin, "fulltext/core") == ["PG-X-1"]
    with app.app_context(), transaction() as session:
        session.execute(update(Entity).where(Entity.id == "PG-X-1").values(name="renamed"))
    assert found(admin, "fulltext/renamed") == ["PG-X-1"]
    assert found(admin, "fulltext/core") == []


@ON_POSTGRESQL
@pytest.mark.usefixtures("search_backend")
def test_a_rolled_back_change_leaves_no_document(app: Flask, admin: ApiClient) -> None:
    with app.app_context():
        with pytest.raises(RuntimeError), transaction() as session:
            session.execute(insert(Entity.__table__), [entity_row("PG-ROLLED")])
            session.flush()
            raise RuntimeError("rejected")
        with own_read() as session:
            assert session.scalar(text(
                "SELECT count(*) FROM search_document WHERE entity_id = 'PG-ROLLED'")) == 0


@ON_POSTGRESQL
@pytest.mark.usefixtures("search_backend")
def test_both_backends_find_the_same_documents(app: Flask, corpus: list[str],
                                               tmp_path: Path) -> None:
    """The same documents in each backend, the same clauses: the same hits and totals, for
    every caller's labels (order may differ: each ranks its own way)."""
    callers = [None, actor_labels(Actor(user_id="nobody", roles=frozenset())),
               frozenset({"dept:none"})]
    whoosh = WhooshBackend(tmp_path / "index", 5)
    postgres = PostgresBackend()
    with app.app_context(), transaction():
        documents = list(all_documents())
        assert whoosh.rebuild(documents) == postgres.rebuild(documents) == len(documents)
        assert whoosh.document_ids(None) == postgres.document_ids(None)
        first = sorted(postgres.document_ids(None))[:3]
        for after, limit in (("", 2), (first[0], 2), (first[-1], 1), ("\U0010ffff", 5)):
            assert (whoosh.document_ids_after(after, limit)
                    == postgres.document_ids_after(after, limit)), (after, limit)
        for term in TERMS:
            parsed = clauses(term)
            for labels in callers:
                answers = [engine.search(parsed, labels=labels, eclasses=None, limit=500)
                           for engine in (whoosh, postgres)]
                assert {item for item, _ in answers[0].items} == {
                    item for item, _ in answers[1].items}, (term, labels)
                assert answers[0].total == answers[1].total, (term, labels)
            of_class = [engine.search(parsed, labels=None, eclasses=frozenset({"Sample"}),
                                      limit=500) for engine in (whoosh, postgres)]
            assert {item for item, _ in of_class[0].items} == {
                item for item, _ in of_class[1].items}, term
    whoosh.forget()


def test_lexemes_are_quoted_whole_never_parsed() -> None:
    assert tsquery([("word", "K-12"), ("prefix", "bc-77")]) == "'k-12' & 'bc-77':*"
    assert tsquery([("word", "o'brien")]) == "('o\u00a0brien')"  # two words: their pair
    assert tsquery([("phrase", "e. coli")]) == "('e\u00a0coli')"
    assert tsquery([("word", "--")]) is None


@ON_POSTGRESQL
@pytest.mark.usefixtures("search_backend")
def test_rebuild_and_status_on_the_command_line(app: Flask, runner: FlaskCliRunner,
                                                corpus: list[str]) -> None:
    with app.app_context():
        entities = db.session.scalar(select(func.count()).select_from(Entity))
        db.session.remove()
    result = runner.invoke(args=["search", "rebuild"])
    assert result.exit_code == 0, result.output
    assert f"Indexed {entities} entities (postgresql)." in result.output
    assert "Indexing entities" in result.output  # click's progress bar
    result = runner.invoke(args=["search", "status"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "queue: 0 changes waiting"
    assert lines[2] == f"documents: {entities}"
    assert lines[-1] == "backend: postgresql (table search_document)"


def test_the_setting_binds_the_backend_and_commits_write_documents(
        fresh_app: Callable[..., Flask]) -> None:
    """An application of its own with ``LABAPP_SEARCH_BACKEND=postgresql``: real commits (no
    test savepoints), a rebuild from the command line, then an entity created through the
    API is found at once, with no worker running and nothing left queued."""
    application = fresh_app(initialised=True, SEARCH_BACKEND="postgresql")
    with application.app_context():
        assert backend.current().name == "postgresql"
    result = application.test_cli_runner().invoke(args=["search", "rebuild"])
    assert result.exit_code == 0, result.output
    client_post(application, "cobalt chloride stock")
    assert client_found(application, "cobalt") == {"cobalt chloride stock"}
    assert client_found(application, '"chloride stock"') == {"cobalt chloride stock"}
    assert queued(application) == []


@ON_POSTGRESQL
@pytest.mark.usefixtures("search_backend")
def test_a_text_too_long_for_one_tsvector_is_cut_not_refused(app: Flask,
                                                            admin: ApiClient) -> None:
    """A note of 2 MB of distinct words: the entity is saved and found by its first words;
    PostgreSQL would refuse a tsvector of more than 1 MB."""
    words = " ".join(f"w{number:07d}" for number in range(200_000))
    (sample,) = save(admin, {"eClass": "Sample", "name": "verbose", "description": words})
    assert found(admin, "fulltext/w0000001") == [sample["id"]]
    assert found(admin, "fulltext/verbose") == [sample["id"]]


# Documents of entities that no longer exist: before, among and after the real ones.
VANISHED = frozenset({"AAA00001", "SAM00001x", "SAM99998", "SAM99999"})


def test_a_rebuild_lets_changes_go_on_and_misses_none(
        fresh_app: Callable[..., Flask], monkeypatch: pytest.MonkeyPatch) -> None:
    """``search rebuild`` on PostgreSQL rewrites the documents a unit of work per few
    entities, so the hosts keep serving: between two units, a change to an entity already
    rewritten and one to an entity not yet rewritten go through at once (a lock timeout
    would fail them, where the rebuild of one unit held every document written so far
    until its end) and neither is overwritten by the rebuild; the document of an entity
    that no longer exists goes."""
    application = fresh_app(initialised=True, SEARCH_BACKEND="postgresql")
    monkeypatch.setattr(rebuild, "_UNIT_ENTITIES", 2)
    monkeypatch.setattr(rebuild, "_CHECKED_IDS", 2)  # vanished entities found page by page
    for number in range(6):
        client_post(application, f"walrus {number}")
    with application.app_context():
        samples = list(db.session.scalars(select(Entity.id).where(
            Entity.name.like("walrus %")).order_by(Entity.id)))
        with transaction():
            for vanished in VANISHED:
                db.session.execute(text(
                    "INSERT INTO search_document VALUES (:id, 'Sample', '{}', 'walrus:1')"),
                    {"id": vanished})
    renamed = [samples[0], samples[-1]]  # rewritten before the change, and after it
    steps: list[int] = []

    def changed_between_units(step: int) -> None:
        steps.append(step)
        if len(steps) != 2:
            return
        with application.app_context(), transaction():
            db.session.execute(text("SET LOCAL lock_timeout = '10s'"))
            save_batch(actor_of("admin"), [{"eClass": "Sample", "id": sample_id,
                                            "name": f"narwhal {sample_id}"}
                                           for sample_id in renamed])

    with application.app_context():
        entities = db.session.scalar(select(func.count()).select_from(Entity))
        db.session.remove()
        assert rebuild.rebuild_index(progress=changed_between_units) == entities
        assert not VANISHED & backend.current().document_ids(None)
        db.session.remove()
    assert sum(steps) == entities and len(steps) > 2
    assert client_found(application, "narwhal") == {f"narwhal {sample}" for sample in renamed}
    assert client_found(application, "walrus") == {
        f"walrus {number}" for number in range(1, 5)}
    assert queued(application) == []


def _plan_nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [plan, *(node for child in plan.get("Plans", ()) for node in _plan_nodes(child))]


@ON_POSTGRESQL
@pytest.mark.usefixtures("search_backend")
def test_the_count_reads_no_tsvector_and_the_ranking_only_the_best(
        app: Flask, corpus: list[str]) -> None:
    """The total is counted without reading a row's ``tsvector`` (the indexes answer it), and
    a search's hits are the same however many of them are asked for."""
    with app.app_context(), transaction():
        query = tsquery(clauses("grown"))
        assert query is not None
        statements = search_statements(query, labels=frozenset({"x"}), eclasses=None, limit=1)
        # The plan of a table of 10^5 rows, where the indexes are worth reading.
        db.session.execute(text("SET LOCAL enable_seqscan = off"))
        plan = db.session.execute(text(f"EXPLAIN (VERBOSE, FORMAT JSON) "
                                       f"{statements.count.text}"),
                                  statements.parameters).scalar_one()[0]["Plan"]
        read = {output for node in _plan_nodes(plan) for output in node.get("Output", ())}
        assert not {"words", "search_document.words"} & read, plan
        search = PostgresBackend().search
        best = search(clauses("grown"), labels=None, eclasses=None, limit=1)
        every = search(clauses("grown"), labels=None, eclasses=None, limit=500)
        counted = search(clauses("grown"), labels=None, eclasses=None, limit=0)
    assert {corpus[0], corpus[3]} <= {entity_id for entity_id, _ in every.items}
    assert best.total == every.total == counted.total == len(every.items)
    assert best.items == every.items[:1] and counted.items == []


@ON_POSTGRESQL
@pytest.mark.usefixtures("search_backend")
def test_a_chunk_is_one_statement_and_keeps_every_label_and_the_last_document(
        app: Flask) -> None:
    """Documents are upserted a chunk per statement (its columns as arrays): labels holding
    the characters of PostgreSQL's array text come back as they were, and an id given twice
    keeps its last document."""
    labels = frozenset({'d:"quoted"', "p:back\\slash", "g:{brace},comma", "plain", ""})
    first = Document("SAM-LABELS", "Sample", frozenset({"old"}), "old name", "old name")
    last = Document("SAM-LABELS", "Sample", labels, "new name", "new name")
    other = Document("SAM-OTHER", "Sample", frozenset({"plain"}), "other", "other")
    with statements(app, keep=lambda sql: "INSERT INTO search_document" in sql) as upserts:
        with app.app_context(), transaction():
            PostgresBackend().write(lambda: ([first, last, other], []))
    with app.app_context(), transaction():
        stored = dict(db.session.execute(text(
            "SELECT entity_id, labels FROM search_document "
            "WHERE entity_id IN ('SAM-LABELS', 'SAM-OTHER')")).all())
        hits = PostgresBackend().search(clauses("new"), labels=frozenset({"plain"}),
                                        eclasses=None, limit=5)
    assert len(upserts) == 1
    assert set(stored["SAM-LABELS"]) == labels and stored["SAM-OTHER"] == ["plain"]
    assert [entity_id for entity_id, _ in hits.items] == ["SAM-LABELS"]
