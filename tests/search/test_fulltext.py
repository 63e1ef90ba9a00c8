"""Full-text search (decisions §9): lab identifiers as typed, folding, prefixes, phrases,
notes and file names, and terms the syntax cannot read."""
from __future__ import annotations

import base64

import pytest
from flask import Flask
from sqlalchemy import update

from labapp.db import transaction
from labapp.model import Entity
from labapp.search import postgresql
from labapp.search.index import searching
from tests.conftest import ApiClient
from tests.entities.conftest import save
from tests.search.conftest import found, search

# Each test runs on every search backend of the pass (tests/search/conftest.py).
pytestmark = pytest.mark.usefixtures("search_backend")


@pytest.fixture
def culture(admin: ApiClient) -> str:
    (sample,) = save(admin, {
        "eClass": "Sample", "name": "SAM00042 K-12 culture", "barcode": "BC-7781",
        "description": "Grown in pH7.4 buffer; E. coli strain, stained for β-actin at the Café",
        "attributes": {"medium": "LB Lennox", "od600": 0.42}})
    save(admin, {"eClass": "Sample", "name": "Unrelated plate", "description": "yeast"})
    return sample["id"]


@pytest.mark.parametrize("term", [
    "SAM00042", "sam00042", "K-12", "pH7.4", "E. coli", "β-actin", "cafe", "CAFÉ",
    "Lennox", "0.42", "BC-7781", "12", "actin"])
def test_lab_text_is_found_as_typed(admin: ApiClient, culture: str, term: str) -> None:
    assert found(admin, f"fulltext/{term}") == [culture]


def test_words_are_anded(admin: ApiClient, culture: str) -> None:
    assert found(admin, "fulltext/buffer culture") == [culture]
    assert found(admin, "fulltext/buffer yeast") == []


def test_prefixes_of_names_and_of_other_text(admin: ApiClient, culture: str) -> None:
    assert found(admin, "fulltext/cult*") == [culture]
    assert found(admin, "fulltext/BC-77*") == [culture]
    assert len(found(admin, "fulltext/sa*")) == 2  # both samples' ids
    assert found(admin, "fulltext/stain*") == [culture]  # the description's "stained"
    assert found(admin, "fulltext/Unrel*") != [culture]


def test_phrases_keep_word_order(admin: ApiClient, culture: str) -> None:
    assert found(admin, 'fulltext/"coli strain"') == [culture]
    assert found(admin, 'fulltext/"strain coli"') == []
    assert found(admin, 'fulltext/"K-12 culture"') == [culture]


@pytest.mark.parametrize("term", ['"unbalanced', "a*", "*", "AND OR NOT", "((x", "x:y~2^3",
                                  "%_", "*\u00e9*"])
def test_terms_the_syntax_cannot_read_are_words(admin: ApiClient, culture: str,
                                                term: str) -> None:
    body = search(admin, f"fulltext/{term}")
    assert isinstance(body["data"], list) and body["total"] == len(body["data"])


def test_scores_rank_better_matches_first(admin: ApiClient) -> None:
    (weak,) = save(admin, {"eClass": "Sample", "name": "plate", "description": "lysate once"})
    (strong,) = save(admin, {"eClass": "Sample", "name": "lysate", "description": "lysate"})
    body = search(admin, "fulltext/lysate")
    assert [item["id"] for item in body["data"]] == [strong["id"], weak["id"]]
    assert body["data"][0]["score"] > body["data"][1]["score"] > 0
    assert {item["matchedBy"] for item in body["data"]} == {"fulltext"}


def test_note_text_and_file_names_find_their_subject(admin: ApiClient) -> None:
    (sample,) = save(admin, {"eClass": "Sample", "name": "plain", "notes": [
        {"content": "thawed twice by mistake"}], "files": [
        {"name": "chromatogram-run7.csv", "content": base64.b64encode(b"x").decode()}]})
    assert sample["id"] in found(admin, "fulltext/thawed")
    assert sample["id"] in found(admin, "fulltext/chromatogram-run7.csv")
    assert {item["eClass"] for item in search(admin, "fulltext/thawed")["data"]} == {
        "Sample", "Note"}


def test_a_changed_entity_is_found_by_its_new_text_only(admin: ApiClient,
                                                         culture: str) -> None:
    save(admin, {"eClass": "Sample", "id": culture, "name": "renamed flask"}, status=200)
    assert found(admin, "fulltext/renamed") == [culture]
    assert found(admin, "fulltext/culture") == []


def test_freetext_is_the_fulltext_search(admin: ApiClient, culture: str) -> None:
    assert search(admin, "/api/query/freetext/K-12") == search(admin, "fulltext/K-12")


# Whoosh's own paths (unscored common queries, its searcher across generations).
WHOOSH_ONLY = pytest.mark.parametrize("search_backend", ["whoosh"], indirect=True)


@pytest.mark.parametrize("term", ["cult*", "sa*", "buffer culture", "k-12", '"e. coli"',
                                  "sam00042 stain*", "yeast"])
def test_common_queries_unscored_find_what_scored_ones_find(
        admin: ApiClient, culture: str, term: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A query matching more than ``COMMON`` documents is not ranked (Whoosh answers it from
    posting-list sets, PostgreSQL in id order); with the threshold lowered here, every query
    takes that path and finds the same, with the same total."""
    scored = search(admin, f"fulltext/{term}")
    monkeypatch.setattr(searching, "COMMON", 0)
    monkeypatch.setattr(postgresql, "COMMON", 0)
    unscored = search(admin, f"fulltext/{term}")
    assert {item["id"] for item in unscored["data"]} == {item["id"] for item in scored["data"]}
    assert unscored["total"] == scored["total"] and scored["total"] >= 1
    assert {item["score"] for item in unscored["data"]} == {0.0}


@WHOOSH_ONLY
@pytest.mark.parametrize("common", [0, 5000])
def test_a_replaced_document_no_longer_matches_its_old_words(
        app: Flask, admin: ApiClient, culture: str, monkeypatch: pytest.MonkeyPatch,
        common: int) -> None:
    """Scored and unscored, with the process's searcher opened before the change."""
    monkeypatch.setattr(searching, "COMMON", common)
    assert found(admin, "fulltext/cult*") == [culture]
    with app.app_context(), transaction() as session:  # queued and drained after the commit
        session.execute(update(Entity).where(Entity.id == culture).values(name="renamed"))
    assert found(admin, "fulltext/renam*") == [culture]
    assert found(admin, "fulltext/cult*") == []
    assert found(admin, "fulltext/culture") == []


def test_a_backend_that_stops_counting_says_the_total_is_a_lower_bound(
        admin: ApiClient, culture: str, search_backend: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """PostgreSQL counts full-text matches up to ``COUNTED`` (every match of a common word
    cost 100-220 ms at 10^6); Whoosh counts them all. The page says "At least"."""
    save(admin, {"eClass": "Sample", "name": "Third culture"})
    monkeypatch.setattr(postgresql, "COUNTED", 1)
    body = search(admin, "fulltext/culture")
    page = admin.get("/search", query_string={"q": "culture", "mode": "fulltext"},
                     headers={"HX-Request": "true"}).get_data(as_text=True)
    if search_backend == "postgresql":
        assert body["total"] == 1 and body["totalExact"] is False
        assert len(body["data"]) == 2  # the hits are all there, only the count stops
        assert "At least 1 found" in page
    else:
        assert body["total"] == 2 and body["totalExact"] is True
        assert "2 found" in page and "At least" not in page
