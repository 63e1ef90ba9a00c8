"""Documents of the rows a unit of work inserts itself (labapp/search/inserted.py): on the
PostgreSQL backend a bulk create's documents are made from the values it inserted, with
nothing queued; on every backend what is found after the commit is what the database holds
then, whatever else the unit did to those rows."""
from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from sqlalchemy import delete, select, text, update

from labapp.db import db, transaction
from labapp.entities.service import create_stored_file, save_batch
from labapp.model import Entity, Note, SearchQueue
from labapp.search.indexer import documents_for
from labapp.search.postgresql import vector
from tests.conftest import ApiClient
from tests.databases import BACKEND
from tests.entities.conftest import save
from tests.imports.conftest import actor_of
from tests.search.conftest import found

SEARCHED = pytest.mark.usefixtures("search_backend")


def _batch(subject_id: str) -> list[dict[str, Any]]:
    """Items whose every searchable value holds a word no other entity has."""
    return [
        {"eClass": "Sample", "name": "Quokka K-12 lysate", "barcode": "BC-QK-0001",
         "description": "grown in wombatbroth", "attributes": {
             "medium": {"base": "platypusagar", "additives": ["echidnasalt", 7]},
             "od600": 0.42, "ok": True},
         "notes": [{"content": "bilbynote stained"}]},
        {"eClass": "Experiment", "name": "Numbat run", "attributes.lot": "dingolot"},
        {"eClass": "Note", "subjectID": subject_id, "content": "cassowarynote on old"},
    ]


@SEARCHED
def test_a_created_batch_is_found_by_each_value_only_it_holds(admin: ApiClient) -> None:
    (old,) = save(admin, {"eClass": "Sample", "name": "Older sample"})
    sample, run, note = save(admin, *_batch(old["id"]))
    attached = found(admin, "fulltext/bilbynote")
    assert len(attached) == 2 and sample["id"] in attached  # the sample and its note
    for term in ("quokka", "k-12", "12", "bc-qk-0001", "qk*", "wombatbroth",
                 '"grown in wombatbroth"', "platypusagar", "echidnasalt", "0.42"):
        assert found(admin, f"fulltext/{term}") == [sample["id"]], term
    assert found(admin, "fulltext/dingolot") == [run["id"]]
    assert found(admin, "fulltext/numbat") == [run["id"]]
    # A note added to an entity the batch did not create: both are found by its text.
    assert sorted(found(admin, "fulltext/cassowarynote")) == sorted([old["id"], note["id"]])
    assert found(admin, "fulltext/older") == [old["id"]]


@SEARCHED
def test_a_change_in_the_unit_that_created_the_rows_is_what_is_found(
        app: Flask, admin: ApiClient) -> None:
    """Created, then changed in the same unit of work: renamed through the service, its
    description changed by a Core update, its note's text changed, another note deleted."""
    with app.app_context(), transaction():
        actor = actor_of("admin")
        created = save_batch(actor, [
            {"eClass": "Sample", "name": "Aardvark first", "description": "tapirtext",
             "notes": [{"content": "okapinote"}, {"content": "serowgone"}]},
            {"eClass": "Sample", "name": "Pangolin kept"}]).entities
        first = created[0]["id"]
        save_batch(actor, [{"eClass": "Sample", "id": first, "name": "Aardwolf second"}])
        db.session.execute(update(Entity).where(Entity.id == first)
                           .values(description="capybaratext"))
        notes = dict(db.session.execute(select(Note.content, Note.id)
                                        .where(Note.subject_id == first)).all())
        db.session.execute(update(Note).where(Note.id == notes["okapinote"])
                           .values(content="margaynote"))
        db.session.execute(delete(Entity).where(Entity.id == notes["serowgone"]))
    for stale in ("aardvark", "first", "tapirtext", "okapinote", "serowgone"):
        assert found(admin, f"fulltext/{stale}") == [], stale
    assert found(admin, "fulltext/aardwolf") == [first]
    assert found(admin, "fulltext/capybaratext") == [first]
    assert sorted(found(admin, "fulltext/margaynote")) == sorted([first, notes["okapinote"]])
    assert found(admin, "fulltext/pangolin") == [created[1]["id"]]


@SEARCHED
def test_a_rolled_back_batch_leaves_no_document(app: Flask, admin: ApiClient) -> None:
    (old,) = save(admin, {"eClass": "Sample", "name": "Survivor sample"})
    with app.app_context():
        with pytest.raises(RuntimeError), transaction():
            save_batch(actor_of("admin"), _batch(old["id"]))
            raise RuntimeError("rejected")
    for term in ("quokka", "bilbynote", "dingolot", "cassowarynote"):
        assert found(admin, f"fulltext/{term}") == [], term
    assert found(admin, "fulltext/survivor") == [old["id"]]
    with app.app_context():
        assert db.session.scalar(select(SearchQueue.id).limit(1)) is None


def _stored_as_read_back(ids: list[str]) -> dict[str, bool]:
    """For each id, whether its stored document is the one its rows give now: the same
    class, labels and words (with their positions)."""
    documents, gone = documents_for(ids)
    assert gone == []
    same: dict[str, bool] = {}
    for document in documents:
        row = db.session.execute(text(
            "SELECT eclass, labels, words = CAST(:vector AS tsvector) AS words "
            "FROM search_document WHERE entity_id = :id"),
            {"id": document.id, "vector": vector(document)}).one()
        same[document.id] = (row.eclass, set(row.labels), row.words) == (
            document.eclass, document.labels, True)
    return same


@pytest.mark.parametrize("search_backend", ["postgresql"], indirect=True)
@pytest.mark.skipif(BACKEND != "postgresql", reason="PostgreSQL pass only")
@SEARCHED
def test_documents_made_from_inserted_values_are_those_read_back_and_none_queued(
        app: Flask, admin: ApiClient) -> None:
    """Every document the unit made from its inserted values is the one the database's rows
    give at the commit (words, positions, labels), nothing was queued for them, and values
    ``jsonb`` gives back spelled otherwise (1e20) are found as the database spells them."""
    (old,) = save(admin, {"eClass": "Sample", "name": "Older sample"})
    with app.app_context(), transaction():
        actor = actor_of("admin")
        items = [*_batch(old["id"]), {"eClass": "Sample", "name": "Exponent",
                                      "attributes": {"huge": 1e20, "tiny": 1.5e-7}}]
        created = [item["id"] for item in save_batch(actor, items).entities]
        stored_file = create_stored_file(actor, name="quollfile.fasta", media_type="text/plain",
                                         sha256="0" * 64, size=1, subject_id=created[0])
        assert db.session.scalar(select(SearchQueue.id).limit(1)) is None
        notes = list(db.session.scalars(select(Note.id).where(Note.subject_id == created[0])))
    with app.app_context():
        ids = [*created, *notes, stored_file["id"], old["id"]]
        assert _stored_as_read_back(ids) == dict.fromkeys(ids, True)
    assert found(admin, "fulltext/100000000000000000000") == [created[-1]]
    assert found(admin, "fulltext/1e+20") == []
    assert sorted(found(admin, "fulltext/quollfile.fasta")) == sorted(
        [created[0], stored_file["id"]])
