"""Document-number bitmaps (labapp/search/index/docsets.py) against Python sets, and posting
lists read a block at a time against Whoosh's own reading, across segments and deletions."""
from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from labapp.search.index import Document, Kept, rebuild, searching, write
from labapp.search.index.docsets import DocSet
from labapp.search.index.documents import open_index
from labapp.search.index.searching import term_bits, term_ids

SIZE = 3000
numbers = st.sets(st.integers(min_value=0, max_value=SIZE - 1), max_size=300)


@settings(deadline=None)  # behaviour, not time: a loaded machine took over 200 ms an example
@given(numbers, numbers, st.integers(min_value=0, max_value=60))
def test_a_docset_behaves_as_the_set_of_its_numbers(a: set[int], b: set[int],
                                                    count: int) -> None:
    left, right = DocSet.of(a, SIZE), DocSet.of(b, SIZE)
    assert list(left) == sorted(a) and len(left) == len(a) and bool(left) == bool(a)
    assert set(left & right) == a & b and set(left | right) == a | b
    assert left.smallest(count) == sorted(a)[:count]
    assert all(number in left for number in a)
    assert not any(number in left for number in b - a)
    assert -1 not in left and SIZE * 8 not in left and "1" not in left


def _document(number: int, words: str) -> Document:
    return Document(id=f"D{number}", eclass="Sample", labels=frozenset({"d:1"}),
                    key_text=f"D{number}", text=f"D{number} {words}")


def test_block_reads_match_whoosh_across_segments_and_deletions(tmp_path: Path) -> None:
    path = tmp_path / "index"
    # 700 documents: the common word's posting list spans several blocks.
    rebuild(Kept(path), [_document(n, "common" + (" rare" if n % 97 == 0 else ""))
                   for n in range(700)], timeout=5)
    # A second segment: documents replaced (deleted in the first) and new ones.
    write(Kept(path), lambda: ([_document(n, "changed") for n in range(0, 700, 3)]
                         + [_document(n, "common") for n in range(700, 900)], ["D5"]),
          timeout=5)
    with open_index(path).searcher() as searcher:
        reader = searcher.reader()
        assert len(list(reader.leaf_readers())) == 2
        for word in ("common", "rare", "changed", "absent"):
            expected = (list(searcher.postings("text", word).all_ids())
                        if ("text", word) in reader else [])
            assert term_ids(reader, "text", word) == expected, word
        assert len(term_ids(reader, "text", "common")) == 700 - 234 - 1 + 200


def test_segment_bitmaps_are_kept_across_generations_without_their_deletions(
        tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "index"
    kept = Kept(path)
    rebuild(kept, [_document(n, "common") for n in range(600)], timeout=5)
    reads: list[str] = []
    posting_ids = searching.posting_ids

    def counted(leaf, field, text):
        reads.append(leaf.segment().segment_id())
        return posting_ids(leaf, field, text)
    monkeypatch.setattr(searching, "posting_ids", counted)

    def labelled(generation: int) -> list[int]:
        with open_index(path).searcher() as searcher:
            reader = searcher.reader()
            found = list(term_bits(reader, "labels", ["d:1"], kept))
            assert found == list(searcher.postings("labels", "d:1").all_ids()), generation
            assert list(term_bits(reader, "text", ["common", "changed"], kept)) == sorted(
                set(term_ids(reader, "text", "common")) | set(term_ids(reader, "text",
                                                                        "changed")))
            return found
    assert len(labelled(1)) == 600 and len(reads) == 2  # the labels, then "common"
    # A write: 100 documents replaced (deleted in the big segment) and one removed.
    write(kept, lambda: ([_document(n, "changed") for n in range(0, 600, 6)], ["D7"]),
          timeout=5)
    reads.clear()
    assert len(labelled(2)) == 599
    # Only the new segment is read: its labels and "changed" (it holds no "common").
    assert len(set(reads)) == 1 and len(reads) == 2, reads


def test_a_generation_removed_while_opening_is_opened_again(tmp_path: Path,
                                                            monkeypatch) -> None:
    path = tmp_path / "index"
    kept = Kept(path)
    rebuild(kept, [_document(n, "common") for n in range(5)], timeout=5)
    searching.forget(kept)
    opened: list[int] = []
    open_index_ = searching.open_index

    def racing(folder: Path):
        opened.append(1)
        if len(opened) == 1:  # a commit removed the generation being opened
            raise FileNotFoundError(2, "No such file or directory", "_MAIN_7.toc")
        return open_index_(folder)
    monkeypatch.setattr(searching, "open_index", racing)
    hits = searching.search(kept, [("word", "common")], labels=None, eclasses=None, limit=10)
    assert hits.total == 5 and len(opened) == 2
