"""Replacing and deleting documents at size (issue 24): each id is looked for only in the
segments whose range of ids can hold it, also when a segment is not in id order; phrases stay
within one part of an entity's text; prefixes find whole words without an n-gram of their own."""
from __future__ import annotations

import random
from pathlib import Path

from whoosh import index as whoosh_index

from labapp.search import analysis, index
from labapp.search.index import Kept, deleting

LABELS = frozenset({"dept:D1"})


def _document(number: int, word: str = "lysate", width: int = 4) -> index.Document:
    key = index.text_of((f"SAM{number:0{width}d}", f"{word.title()} {number}"))
    return index.Document(id=f"SAM{number:0{width}d}", eclass="Sample", labels=LABELS,
                          key_text=key, text=index.text_of((key, f"{word} prepared")))


def _found(path: Path, *clauses: index.Clause) -> set[str]:
    hits = index.search(Kept(path), list(clauses), labels=None, eclasses=None, limit=500)
    return {item for item, _ in hits.items}


def _ranges(path: Path) -> list[tuple[bytes, bytes] | None]:
    reader = whoosh_index.open_dir(str(path)).reader()
    return [deleting._id_range(leaf, Kept(path)) for leaf, _ in reader.leaf_readers()]


def test_each_segment_holds_a_range_of_ids_and_replacements_find_theirs(
        tmp_path: Path) -> None:
    path = tmp_path / "index"
    index.rebuild(Kept(path), (_document(number) for number in range(60)), 5, segment_size=10)
    assert _ranges(path) == [(f"SAM{start:04d}".encode(), f"SAM{start + 9:04d}".encode())
                             for start in range(0, 60, 10)]
    changed = [_document(number, "plasmid") for number in (57, 3, 25, 26, 41)]
    index.write(Kept(path), lambda: (changed, ["SAM0011", "SAM0999"]), 5, segment_size=2)
    assert _found(path, ("word", "plasmid")) == {"SAM0003", "SAM0025", "SAM0026", "SAM0041",
                                                 "SAM0057"}
    lysate = _found(path, ("word", "lysate"))
    assert lysate == {f"SAM{number:04d}" for number in range(60)} - {
        "SAM0003", "SAM0011", "SAM0025", "SAM0026", "SAM0041", "SAM0057"}
    # The drain's own segments are in id order too, so a second change finds its id in one.
    assert _ranges(path)[6:] == [(b"SAM0003", b"SAM0025"), (b"SAM0026", b"SAM0041"),
                                 (b"SAM0057", b"SAM0057")]
    index.write(Kept(path), lambda: ([_document(25, "primer")], []), 5)
    assert _found(path, ("word", "primer")) == {"SAM0025"}
    assert "SAM0025" not in _found(path, ("word", "plasmid"))
    assert index.document_ids(Kept(path), None) == {f"SAM{number:04d}" for number in range(60)
                                              if number != 11}


def test_a_segment_out_of_id_order_is_searched_past_its_last_document(
        tmp_path: Path) -> None:
    path = tmp_path / "index"
    numbers = list(range(40))
    random.Random(7).shuffle(numbers)  # one segment (a small rebuild) in this order
    index.rebuild(Kept(path), (_document(number) for number in numbers), 5)
    assert _ranges(path) == [(b"SAM0000", b"SAM0039")]
    replaced = [_document(number, "plasmid") for number in (0, 39, numbers[-1])]
    index.write(Kept(path), lambda: (replaced, []), 5)
    assert _found(path, ("word", "plasmid")) == {doc.id for doc in replaced}
    assert _found(path, ("word", "lysate")).isdisjoint({doc.id for doc in replaced})
    assert len(index.document_ids(Kept(path), None)) == 40


def test_many_replacements_read_a_segment_in_order_and_few_look_ids_up(
        tmp_path: Path) -> None:
    """Both ways of finding ids in a segment delete the same documents."""
    for count in (3, 30):  # of 40: looked up one by one, then read in order
        path = tmp_path / f"index{count}"
        index.rebuild(Kept(path), (_document(number) for number in range(40)), 5)
        replaced = [_document(number, "plasmid") for number in range(0, 40, 40 // count)]
        index.write(Kept(path), lambda replaced=replaced: (replaced, []), 5)
        assert _found(path, ("word", "plasmid")) == {doc.id for doc in replaced}
        assert len(_found(path, ("word", "lysate"))) == 40 - len(replaced)
        assert len(index.document_ids(Kept(path), None)) == 40


def test_phrases_match_within_one_part_of_the_text(tmp_path: Path) -> None:
    path = tmp_path / "index"
    document = index.Document(
        id="SAM0001", eclass="Sample", labels=LABELS,
        key_text=index.text_of(("SAM0001", "Alpha beta")),
        text=index.text_of(("SAM0001", "Alpha beta", "gamma delta\nepsilon")))
    index.rebuild(Kept(path), [document], 5)
    assert _found(path, ("phrase", "alpha beta")) == {"SAM0001"}
    assert _found(path, ("phrase", "gamma delta")) == {"SAM0001"}
    assert _found(path, ("phrase", "delta epsilon")) == {"SAM0001"}  # a line break is no part
    assert _found(path, ("phrase", "beta gamma")) == set()  # name, then description
    assert _found(path, ("phrase", "sam0001 alpha")) == set()  # id, then name


def test_a_prefix_finds_a_whole_word_without_its_own_edge(tmp_path: Path) -> None:
    """``sam0001*`` has a hundred longer words, more than a prefix expands in the text field;
    the id SAM0001 itself has no n-gram of its whole length and is still found."""
    assert analysis.edges(["sam0001"]) == ["sa", "sam", "sam0", "sam00", "sam000"]
    path = tmp_path / "index"
    documents = [_document(1, width=4), *(_document(number, width=6)
                                          for number in range(100, 200))]
    index.rebuild(Kept(path), documents, 5)
    found = _found(path, ("prefix", "sam0001"))
    assert "SAM0001" in found and len(found) == 101
    assert _found(path, ("prefix", "lysate")) == {doc.id for doc in documents}
