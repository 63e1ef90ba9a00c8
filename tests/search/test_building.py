"""Building the index at size: a rebuild or a drain split over worker processes (one segment
per chunk) answers every query kind as one process does, commits never merge big segments,
and the old index stays readable while a rebuild runs. Tiny chunk sizes force those paths on
a few documents."""
from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from sqlalchemy import insert
from whoosh import index as whoosh_index

from labapp.db import transaction
from labapp.model import Entity
from labapp.search import index, indexer
from labapp.search.index import Kept
from labapp.search.index import documents as index_documents
from tests.helpers.searching import entity_row, queued

LABELS = frozenset({"dept:D1"})
STRAINS = ("K-12", "BL21", "DH5α", "β-actin", "pH7.4")
QUERIES: list[list[index.Clause]] = [
    [("word", "lysate")], [("word", "k-12")], [("word", "12")], [("word", "buffer")],
    [("word", "lysate"), ("word", "bl21")], [("phrase", "prepared from")],
    [("phrase", "lysate k-12")], [("prefix", "ly")], [("prefix", "sam0")], [("prefix", "ph7")],
]


def _document(number: int, word: str = "lysate") -> index.Document:
    key = f"SAM{number:04d} {word.title()} {STRAINS[number % len(STRAINS)]}"
    text = f"{key} prepared from stock lot L{number % 7}" + (" buffer" if number % 2 else "")
    return index.Document(id=f"SAM{number:04d}", eclass="Sample",
                          labels=LABELS if number % 3 else frozenset({"dept:D2"}),
                          key_text=key, text=text)


def _answers(path: Path) -> list[tuple[list[tuple[str, float]], int]]:
    return [(hits.items, hits.total) for hits in
            (index.search(Kept(path), query, labels=labels, eclasses=None, limit=50)
             for query in QUERIES for labels in (None, LABELS))]


def _segment_sizes(path: Path) -> list[int]:
    return [segment.doc_count_all() for segment in whoosh_index.open_dir(str(path))._segments()]


def test_a_rebuild_in_worker_processes_answers_as_one_process(tmp_path: Path) -> None:
    corpus = [_document(number) for number in range(40)]
    single, split = tmp_path / "single", tmp_path / "split"
    assert index.rebuild(Kept(single), corpus, 5) == 40
    assert index.rebuild(Kept(split), corpus, 5, segment_size=7) == 40
    assert _segment_sizes(single) == [40]
    assert _segment_sizes(split) == [7, 7, 7, 7, 7, 5]
    assert _answers(split) == _answers(single)
    assert index.document_ids(Kept(split), None) == {document.id for document in corpus}


def test_a_drain_in_worker_processes_replaces_and_deletes_as_one_process(
        tmp_path: Path) -> None:
    corpus = [_document(number) for number in range(30)]
    changed = [_document(number, "plasmid") for number in range(0, 30, 2)]
    gone = ["SAM0001", "SAM0003"]
    for folder, segment_size in (("single", 1000), ("split", 4)):
        path = tmp_path / folder
        index.rebuild(Kept(path), corpus, 5)
        index.write(Kept(path), lambda: (changed, gone), 5, segment_size=segment_size)
    single, split = tmp_path / "single", tmp_path / "split"
    assert _segment_sizes(split) == [30, 4, 4, 4, 3]
    assert _answers(split) == _answers(single)
    plasmid = index.search(Kept(split), [("word", "plasmid")], labels=None, eclasses=None, limit=50)
    assert sorted(item for item, _ in plasmid.items) == sorted(doc.id for doc in changed)
    lysate = index.search(Kept(split), [("word", "lysate")], labels=None, eclasses=None, limit=50)
    assert {item for item, _ in lysate.items} == {
        f"SAM{number:04d}" for number in range(30) if number % 2 and number not in (1, 3)}


def test_a_commit_merges_small_segments_and_keeps_big_ones(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rebuild of 1,000,000 documents leaves 40 segments; Whoosh's MERGE_SMALL would merge
    26 of them in the next drain. Here segments of 4 documents count as big."""
    path = tmp_path / "index"
    index.rebuild(Kept(path), [_document(number) for number in range(28)], 5, segment_size=4)
    big = whoosh_index.open_dir(str(path))._segments()
    monkeypatch.setattr(index_documents, "SMALL_SEGMENT", 4)
    for number in range(28, 36):  # eight one-document commits: MERGE_SMALL merges them
        index.write(Kept(path), lambda n=number: ([_document(n)], []), 5)
    segments = whoosh_index.open_dir(str(path))._segments()
    assert [segment.segid for segment in segments[:7]] == [segment.segid for segment in big]
    assert len(segments) < 7 + 8
    assert len(index.document_ids(Kept(path), None)) == 36


def test_the_old_index_answers_while_a_rebuild_runs(tmp_path: Path) -> None:
    path = tmp_path / "index"
    index.rebuild(Kept(path), [_document(number) for number in range(10)], 5)
    seen_meanwhile: list[int] = []

    def documents() -> Iterator[index.Document]:
        for number in range(10, 40):
            if number == 30:  # two chunks are being indexed by the workers by now
                hits = index.search(Kept(path), [("word", "lysate")], labels=None, eclasses=None,
                                    limit=50)
                seen_meanwhile.append(hits.total)
            yield _document(number, "plasmid")

    assert index.rebuild(Kept(path), documents(), 5, segment_size=8) == 30
    assert seen_meanwhile == [10]
    after = index.search(Kept(path), [("word", "lysate")], labels=None, eclasses=None, limit=50)
    assert after.total == 0


def test_a_drain_counts_every_batch_it_indexed(app: Flask,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The drain's own DELETE of its rows once woke a nested drain per batch (the first
    drain then reported one batch, and a long queue nested a drain per batch)."""
    monkeypatch.setattr(indexer, "BATCH", 2)
    with app.app_context():
        with monkeypatch.context() as worker:  # as if a worker ran: the commit leaves the rows
            worker.setattr(indexer, "worker_alive", lambda: True)
            with transaction() as session:
                session.execute(insert(Entity.__table__),
                                [entity_row(f"Q-BATCH-{number}") for number in range(5)])
        assert queued(app) == [f"Q-BATCH-{number}" for number in range(5)]
        assert indexer.drain() == 5
    assert queued(app) == []


def _new_objects(before: set[int]) -> int:
    """How many objects the collector tracks now that were not among ``before``."""
    return sum(1 for found in gc.get_objects() if id(found) not in before)


def test_a_worker_frees_the_previous_segment_with_its_collector_off(tmp_path: Path) -> None:
    """A worker forked while the parent collects less never collects on its own: each
    segment must free the previous one's garbage (at a million documents the two workers
    held 9 GB each)."""
    index.rebuild(Kept(tmp_path), [], timeout=5)
    documents = [_document(number) for number in range(300)]
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        gc.collect()  # the garbage of earlier tests is not this worker's to count
        # Objects counted by identity, not by the total: another thread of the test process
        # freeing its own objects meanwhile must not hide what the segments leave.
        before = {id(found) for found in gc.get_objects()}
        index_documents._segment_of(str(tmp_path), documents)
        first = _new_objects(before)
        index_documents._segment_of(str(tmp_path), documents)
        second = _new_objects(before)
    finally:
        if was_enabled:
            gc.enable()
        gc.collect()
    assert first > 1000  # a segment's writer leaves that much cyclic garbage
    assert second < first * 1.5, (first, second)
