"""Reading entity documents for the index (labapp/search/indexer.py): the ids are one array
parameter on PostgreSQL (``= ANY``), a list on SQLite, and either way every entity asked
for is read with the notes and files attached to it."""
from __future__ import annotations

from flask import Flask
from sqlalchemy import func, insert, select

from labapp.db import db, transaction
from labapp.model import Entity, Sample, SearchQueue
from labapp.search.indexer import among, documents_for
from tests.helpers.searching import entity_row


def test_documents_of_many_ids_are_read_and_missing_ids_reported(app: Flask) -> None:
    ids = [f"DOC-MANY-{number:04d}" for number in range(1200)]
    with app.app_context(), transaction() as session:
        session.execute(insert(Entity.__table__), [entity_row(entity_id) for entity_id in ids])
        session.execute(insert(Sample.__table__), [{"id": entity_id} for entity_id in ids])
        documents, gone = documents_for([*ids, "DOC-MANY-NONE"])
        assert sorted(document.id for document in documents) == ids
        assert gone == ["DOC-MANY-NONE"]


def test_among_matches_integers_and_strings(app: Flask) -> None:
    with app.app_context(), transaction() as session:
        session.execute(insert(Entity.__table__), [entity_row("DOC-AMONG-1"),
                                                   entity_row("DOC-AMONG-2")])
        queued = list(session.scalars(select(SearchQueue.id).order_by(SearchQueue.id)))
        assert db.session.scalar(select(func.count()).select_from(SearchQueue).where(
            among(SearchQueue.id, queued[:1]))) == 1
        assert set(session.scalars(select(Entity.id).where(
            among(Entity.id, ["DOC-AMONG-2", "DOC-AMONG-3"])))) == {"DOC-AMONG-2"}
