"""The bitmaps of each segment's common terms (labapp/search/index/bitmaps.py, issue 24): the
worker process that writes a segment writes them beside it, searches take a common term from
them without reading its postings, and the file goes with its segment; a missing or damaged
file only means the postings are read."""
from __future__ import annotations

from pathlib import Path

import pytest
from whoosh import index as whoosh_index

from labapp.search import index
from labapp.search.index import Kept, bitmaps, searching
from labapp.search.index.docsets import DocSet

LABELS = frozenset({"dept:D1"})
QUERIES: list[list[index.Clause]] = [[("word", "common")], [("word", "half")],
                                     [("word", "tenth")], [("prefix", "ha")],
                                     [("word", "common"), ("word", "half")]]


def _document(number: int) -> index.Document:
    words = " ".join(["common", *(["half"] if number % 2 else []),
                      *(["tenth"] if number % 10 == 0 else [])])
    return index.Document(id=f"SAM{number:04d}", eclass="Sample",
                          labels=LABELS if number % 4 else frozenset({"dept:D2"}),
                          key_text=f"SAM{number:04d}",
                          text=index.text_of((f"SAM{number:04d}", words)))


def _built(tmp_path: Path) -> Path:
    """800 documents in four segments of 200, made by worker processes."""
    path = tmp_path / "index"
    index.rebuild(Kept(path), (_document(number) for number in range(800)), 5, segment_size=200)
    return path


def _leaves(path: Path) -> list[tuple[object, int]]:
    return list(whoosh_index.open_dir(str(path)).reader().leaf_readers())


def _answers(path: Path) -> list[tuple[list[tuple[str, float]], int]]:
    return [(hits.items, hits.total) for hits in
            (index.search(Kept(path), query, labels=labels, eclasses=None, limit=500)
             for query in QUERIES for labels in (None, LABELS))]


def test_worker_segments_carry_the_bitmaps_of_their_common_terms(tmp_path: Path) -> None:
    path = _built(tmp_path)
    leaves = _leaves(path)
    assert len(leaves) == 4
    for leaf, _base in leaves:
        assert (path / (leaf.segment().segment_id() + bitmaps.SUFFIX)).is_file()
        for field, text in (("text", "common"), ("text", "half"), ("labels", "dept:D1"),
                            ("prefix", "sa"), ("eclass", "Sample")):
            expected = DocSet.of(bitmaps.posting_ids(leaf, field, text), 200).bits
            assert bitmaps.read(Kept(path), leaf, field, text) == expected, (field, text)
        # In 20 of 200 documents: fewer than bitmaps.FEWEST, its postings are short.
        assert bitmaps.read(Kept(path), leaf, "text", "tenth") is None
        assert bitmaps.read(Kept(path), leaf, "text", "absent") is None


def test_common_terms_are_read_from_the_bitmaps_not_the_postings(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _built(tmp_path)
    monkeypatch.setattr(searching, "COMMON", 50)  # "common" and "half" count as common
    expected = _answers(path)
    for file in path.glob("*" + bitmaps.SUFFIX):
        file.unlink()
    assert _answers(path) == expected  # from the postings, as before
    index.rebuild(Kept(path), (_document(number) for number in range(800)), 5, segment_size=200)

    def refused(leaf: object, field: str, text: str | bytes) -> list[int]:
        if text not in ("tenth", b"tenth"):
            raise AssertionError(f"read the postings of {field}:{text}")
        return bitmaps.posting_ids(leaf, field, text)
    monkeypatch.setattr(searching, "posting_ids", refused)
    assert _answers(path) == expected


def test_the_file_leaves_with_its_segment_and_a_damaged_one_is_passed_over(
        tmp_path: Path) -> None:
    path = _built(tmp_path)
    before = {file.name for file in path.glob("*" + bitmaps.SUFFIX)}
    expected = _answers(path)
    index.rebuild(Kept(path), (_document(number) for number in range(800)), 5, segment_size=400)
    after = {file.name for file in path.glob("*" + bitmaps.SUFFIX)}
    assert len(after) == 2 and not before & after
    assert after == {leaf.segment().segment_id() + bitmaps.SUFFIX
                     for leaf, _ in _leaves(path)}
    assert not list(path.glob(".*"))  # nothing staged is left behind
    for file in path.glob("*" + bitmaps.SUFFIX):
        file.write_bytes(file.read_bytes()[:40])  # cut short
    leaf, _ = _leaves(path)[0]
    assert bitmaps.read(Kept(path), leaf, "text", "common") is None
    assert _answers(path) == expected


def test_a_prefix_with_one_rare_word_among_common_ones_is_not_scored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``co*`` expands to "common" (in every document) and "cobalt" (in one): the query's size
    is theirs together, not the rare word's alone (Whoosh's minimum size of an Or), so it is
    answered from the bitmaps, unscored, without reading the common word's postings."""
    path = tmp_path / "index"
    documents = [_document(number) for number in range(800)]
    rare = index.Document(id="SAM9999", eclass="Sample", labels=LABELS, key_text="SAM9999",
                          text=index.text_of(("SAM9999", "cobalt")))
    index.rebuild(Kept(path), [*documents, rare], 5, segment_size=200)
    monkeypatch.setattr(searching, "COMMON", 50)

    def refused(leaf: object, field: str, text: str | bytes) -> list[int]:
        raise AssertionError(f"read the postings of {field}:{text!r}")
    monkeypatch.setattr(searching, "posting_ids", refused)
    hits = index.search(Kept(path), [("prefix", "co")], labels=None, eclasses=None, limit=5)
    assert hits.total == 801 and {score for _, score in hits.items} == {0.0}
