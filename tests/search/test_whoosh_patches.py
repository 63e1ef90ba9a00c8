"""The Whoosh workarounds (labapp/search/index/whoosh_patches.py): each is still needed (Whoosh
alone is still wrong or wasteful, measured by a result or a call count), each still works
on a real index, and a changed internal stops the start with a clear error."""
from __future__ import annotations

import pickle
import random
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from whoosh import writing
from whoosh.codec import base as codec_base
from whoosh.codec import whoosh3
from whoosh.filedb import structfile

from labapp.search.index import Document, Kept, rebuild, whoosh_patches, write
from labapp.search.index.documents import open_index
from labapp.search.index.whoosh_patches import (
    ORIGINAL_CACHED_READER,
    ORIGINAL_RANDOM_ID,
    WhooshChanged,
)

LOOKS = 50  # column lookups of one field in the call-count tests


@pytest.fixture
def seeded() -> Iterator[Callable[[], None]]:
    """Seed the global ``random`` as other code does (Hypothesis, per example); its state
    is put back afterwards."""
    state = random.getstate()
    yield lambda: random.seed(20)
    random.setstate(state)


def _document(number: int) -> Document:
    return Document(id=f"SAM{number:05d}", eclass="Sample", labels=frozenset({"dept:D1"}),
                    key_text=f"SAM{number:05d} patched {number}",
                    text=f"SAM{number:05d} patched {number}")


def test_unpatched_segment_names_repeat_after_a_seed(seeded: Callable[[], None]) -> None:
    seeded()
    first = ORIGINAL_RANDOM_ID(codec_base.Segment)
    seeded()
    assert ORIGINAL_RANDOM_ID(codec_base.Segment) == first  # two commits, one segment name


def test_patched_segment_names_stay_apart_after_a_seed(tmp_path: Path,
                                                       seeded: Callable[[], None]) -> None:
    path = tmp_path / "index"
    rebuild(Kept(path), [], timeout=5)  # applies the workarounds before creating the index
    for number in range(3):
        seeded()
        write(Kept(path), lambda number=number: ([_document(number)], []), timeout=5)
    index = open_index(path)
    names = [segment.segment_id() for segment in index._segments()]
    assert len(names) == len(set(names))
    with index.searcher() as searcher:
        assert sorted(fields["id"] for fields in searcher.all_stored_fields()) == [
            "SAM00000", "SAM00001", "SAM00002"]


def _per_document_reader(tmp_path: Path) -> Any:
    path = tmp_path / "index"
    rebuild(Kept(path), [_document(number) for number in range(3)], timeout=5)
    return open_index(path).reader()._perdoc


def _count_column_checks(reader: Any) -> list[str]:
    """Record every file-system check of a column ``reader`` makes from now on."""
    checks: list[str] = []
    has_column = reader.has_column

    def counted(fieldname: str) -> bool:
        checks.append(fieldname)
        return bool(has_column(fieldname))

    reader.has_column = counted
    return checks


def test_unpatched_a_missing_column_is_looked_for_at_every_call(tmp_path: Path) -> None:
    reader = _per_document_reader(tmp_path)
    checks = _count_column_checks(reader)
    for _ in range(LOOKS):
        assert ORIGINAL_CACHED_READER(reader, "id", None) is None  # ids have no length column
    assert checks == ["id"] * LOOKS


def test_patched_a_missing_column_is_looked_for_once(tmp_path: Path) -> None:
    reader = _per_document_reader(tmp_path)
    assert whoosh3.W3PerDocReader._cached_reader is not ORIGINAL_CACHED_READER
    checks = _count_column_checks(reader)
    for _ in range(LOOKS):
        assert reader._cached_reader("id", None) is None
    assert checks == ["id"]


def test_a_segment_keeps_its_stored_fields_reader_across_generations(
        tmp_path: Path) -> None:
    path = tmp_path / "index"
    rebuild(Kept(path), [_document(number) for number in range(20)], timeout=5)

    def stored() -> tuple[dict[str, Any], dict[str, str]]:
        with open_index(path).searcher() as searcher:
            readers = {leaf.segment().segment_id(): leaf._perdoc._cached_reader(
                "_stored", whoosh3.STORED_COLUMN) for leaf, _ in searcher.reader().leaf_readers()}
            texts = {fields["id"]: fields.get("text", "") for fields in
                     searcher.all_stored_fields()}
            return readers, texts
    first, _ = stored()
    write(Kept(path), lambda: ([Document(id="SAM00003", eclass="Sample", labels=frozenset(),
                                   key_text="SAM00003", text="changed")], ["SAM00004"]),
          timeout=5)
    second, texts = stored()  # a new searcher: the old segment's reader is the one it had
    (old, reader), = first.items()
    assert second[old] is reader and len(second) == 2
    assert "SAM00004" not in texts and len(texts) == 19


def test_the_workarounds_are_applied_by_create_app(app: Flask) -> None:
    assert whoosh3.W3PerDocReader._cached_reader is whoosh_patches._cached_column_reader
    assert codec_base.Segment._random_id() != codec_base.Segment._random_id()
    assert structfile.BufferFile.__init__ is whoosh_patches._buffer_file_init


@pytest.mark.parametrize(("owner", "name", "message"), [
    (whoosh3.W3PerDocReader, "_cached_reader", "W3PerDocReader._cached_reader"),
    (codec_base.Segment, "_random_id", "Segment._random_id"),
    (whoosh3.W3LeafMatcher, "_next_block", "W3LeafMatcher"),
    (writing.SegmentWriter, "_commit_toc", "SegmentWriter"),
    (writing.SegmentWriter, "_finalize_segment", "SegmentWriter"),
    (writing.SegmentWriter, "_close_segment", "SegmentWriter"),
    (writing.SegmentWriter, "_finish", "SegmentWriter"),
])
def test_a_changed_internal_fails_loudly(monkeypatch: pytest.MonkeyPatch, owner: type,
                                         name: str, message: str) -> None:
    monkeypatch.delattr(owner, name)  # as a Whoosh release without it would be
    with pytest.raises(WhooshChanged, match=message):
        whoosh_patches.check()


def test_a_changed_segment_commit_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    """The private writer calls that commit segments made by worker processes are checked
    for what they do, not only that they exist."""
    def commit(self: object, mergetype: object = None, optimize: object = None,
               merge: object = None) -> None:
        raise NotImplementedError  # a release that commits some other way

    monkeypatch.setattr(writing.SegmentWriter, "commit", commit)
    with pytest.raises(WhooshChanged, match="SegmentWriter.commit"):
        whoosh_patches.check()


def test_a_mapped_file_is_read_in_place_not_copied() -> None:
    """Whoosh alone copies the whole buffer of each file it opens (every searcher held its
    own copy of the postings); patched, the reads give the same bytes and copy nothing."""
    whoosh_patches.apply()
    buffer = bytearray(random.Random(7).randbytes(4_000_000))
    sizes = {}
    for name, init in (("whoosh", whoosh_patches.ORIGINAL_BUFFER_FILE_INIT),
                       ("patched", structfile.BufferFile.__init__)):
        tracemalloc.start()
        opened = structfile.BufferFile.__new__(structfile.BufferFile)
        init(opened, memoryview(buffer), name="postings")
        sizes[name] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        opened.seek(1_000_003)
        first = opened.read(17)
        opened.seek(-5, 2)
        last = opened.read()
        opened.seek(10)
        varint = opened.read_varint()
        sizes[f"{name} reads"] = (first, last, varint, opened.tell(), opened.get(99, 4))
    assert sizes["whoosh"] > 3_900_000 and sizes["patched"] < 100_000, sizes
    assert sizes["patched reads"] == sizes["whoosh reads"]


def _common_word_postings(tmp_path: Path) -> Callable[[], Any]:
    """A factory of fresh matchers over the postings of a word of every document of a
    one-segment index of 1,000 (eight blocks of 128)."""
    path = tmp_path / "index"
    rebuild(Kept(path), [_document(number) for number in range(1000)], timeout=5)
    reader = open_index(path).reader()
    (leaf, _), = reader.leaf_readers()
    return lambda: leaf.postings("text", "patched")


def _walk(matcher: Any, skip: Callable[[Any, int], None],
          targets: list[int]) -> tuple[list[int | None], int]:
    """Where ``skip`` leaves ``matcher`` for each target, and how many ``next()`` calls."""
    steps = [0]
    step = matcher.next

    def counted() -> bool:
        steps[0] += 1
        return step()
    matcher.next = counted
    stops: list[int | None] = []
    for target in targets:
        skip(matcher, target)
        stops.append(matcher.id() if matcher.is_active() else None)
    return stops, steps[0]


def test_skipping_within_a_block_bisects_instead_of_walking(tmp_path: Path) -> None:
    """Whoosh walks a block posting by posting to the target of ``skip_to`` (half the time of
    a two-word search at a million documents); patched, it lands on the same postings
    without a ``next()``."""
    whoosh_patches.apply()
    postings = _common_word_postings(tmp_path)
    assert isinstance(postings(), whoosh3.W3LeafMatcher)
    targets = [*sorted(random.Random(3).sample(range(1, 990), 60)), 999, 1000]
    whoosh_stops, whoosh_steps = _walk(postings(), whoosh_patches.ORIGINAL_SKIP_TO, targets)
    patched_stops, patched_steps = _walk(postings(), whoosh3.W3LeafMatcher.skip_to, targets)
    assert patched_stops == whoosh_stops
    assert whoosh_stops[:-1] == targets[:-1] and whoosh_stops[-1] is None  # past the end
    assert whoosh_steps > 500 and patched_steps == 0, (whoosh_steps, patched_steps)


def test_a_small_pickle_is_read_from_a_mapped_file_in_one_peek() -> None:
    """``pickle.load`` read a posting block's header from the mapped file a byte or a few
    at a time (~20 ``readinto`` calls); it now peeks once and consumes what it used."""
    header = pickle.dumps((128, 4_000_000, 1.5, 0, 3, 200))
    data = bytearray(b"\x00" * 11 + header + random.Random(5).randbytes(1000))
    view = whoosh_patches._MappedView(memoryview(data))
    calls: list[str] = []
    for name in ("readinto", "read", "peek"):
        method = getattr(view, name)
        setattr(view, name, lambda *args, _name=name, _method=method: (
            calls.append(_name), _method(*args))[1])
    view.seek(11)
    assert pickle.load(view) == (128, 4_000_000, 1.5, 0, 3, 200)
    assert view.tell() == 11 + len(header)
    assert "readinto" not in calls and len(calls) <= 2, calls
