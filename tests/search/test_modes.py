"""Exact, like and the merged search; $filter and $top; bad input."""
from __future__ import annotations

import pytest

from tests.conftest import ApiClient
from tests.contracts.problem import assert_problem
from tests.entities.conftest import save
from tests.search.conftest import found, search

# Each test runs on every search backend of the pass (tests/search/conftest.py).
pytestmark = pytest.mark.usefixtures("search_backend")


@pytest.fixture
def samples(admin: ApiClient) -> dict[str, str]:
    made = save(admin,
                {"eClass": "Sample", "name": "Lysate", "barcode": "LYS-1"},
                {"eClass": "Sample", "name": "Lysate B", "description": "second"},
                {"eClass": "Sample", "name": "Other", "description": "from the lysate"},
                {"eClass": "Experiment", "name": "Lysate prep"})
    return {"exact": made[0]["id"], "like": made[1]["id"], "text": made[2]["id"],
            "experiment": made[3]["id"]}


def test_exact_matches_id_name_or_barcode(admin: ApiClient, samples: dict[str, str]) -> None:
    assert found(admin, "exact/LYS-1") == [samples["exact"]]
    assert found(admin, f"exact/{samples['like']}") == [samples["like"]]
    assert found(admin, "exact/Lysate") == [samples["exact"]]
    assert found(admin, "exact/Lys") == []


def test_like_contains_with_the_terms_own_wildcards(admin: ApiClient,
                                                    samples: dict[str, str]) -> None:
    assert set(found(admin, "like/ysat")) == {samples["exact"], samples["like"],
                                               samples["experiment"]}
    assert set(found(admin, "like/lysate_b")) == {samples["like"]}
    assert set(found(admin, "like/lys%prep")) == {samples["experiment"]}
    body = search(admin, "like/ysat", top=1)
    assert len(body["data"]) == 1 and body["total"] == 3
    assert search(admin, "like/ysat", top=5)["total"] == 3


def test_like_folds_ascii_case_and_finds_short_terms_and_every_column(
        admin: ApiClient, samples: dict[str, str]) -> None:
    assert set(found(admin, "like/YSATE B")) == {samples["like"]}  # the trigram index path
    assert set(found(admin, "like/ys")) == {samples["exact"], samples["like"],
                                             samples["experiment"]}  # shorter than a trigram
    assert found(admin, "like/s-1") == [samples["exact"]]  # the barcode
    assert found(admin, "like/ate%lys") == []  # never across the name and the barcode


def test_a_backslash_is_a_plain_character(admin: ApiClient) -> None:
    (sample,) = save(admin, {"eClass": "Sample", "name": "C:\\runs\\"})
    assert found(admin, "like/runs\\") == [sample["id"]]
    assert found(admin, "like/C:\\r") == [sample["id"]]
    assert found(admin, "exact/C:\\runs\\") == [sample["id"]]
    assert search(admin, "\\")["total"] >= 1


def test_merged_ranks_exact_then_like_then_fulltext_each_once(
        admin: ApiClient, samples: dict[str, str]) -> None:
    body = search(admin, "Lysate")
    ids = [item["id"] for item in body["data"]]
    assert len(ids) == len(set(ids)) == 4
    assert ids[0] == samples["exact"]
    assert [item["matchedBy"] for item in body["data"]] == ["exact", "like", "like",
                                                            "fulltext"]
    assert ids[3] == samples["text"]
    assert body["total"] == 4 and body["totalExact"] is True


def test_a_merged_total_past_a_modes_best_is_a_lower_bound(
        admin: ApiClient, samples: dict[str, str]) -> None:
    """Each mode returns its best ``$top``: the distinct entities among them are at least
    the total, not always all of it."""
    body = search(admin, "Lysate", top=1)
    assert body["total"] >= 3 and body["totalExact"] is False
    assert search(admin, "like/ysat", top=1)["totalExact"] is True  # one mode counts all


def test_only_like_takes_percent_and_underscore_as_wildcards(
        admin: ApiClient, samples: dict[str, str]) -> None:
    """The merged search (the search box) and full-text match ``%`` and ``_`` as typed;
    only ``like`` reads them as wildcards (``%25`` is ``%`` in the path)."""
    percent, underscore = (item["id"] for item in save(
        admin, {"eClass": "Sample", "name": "Growth 5% glucose"},
        {"eClass": "Sample", "name": "plate_7", "barcode": "PL/7"}))
    assert found(admin, "%25") == [percent]
    assert found(admin, "5%25 GLU") == [percent]  # the trigram path, case folded
    assert found(admin, "_") == [underscore]
    assert found(admin, "e_7") == [underscore]
    assert found(admin, "lysate_b") == []
    assert found(admin, "PL/7") == [underscore]  # the escape character is plain too
    assert found(admin, "L/") == [underscore]
    for term in ("%25", "_", "lysate_b", "lys%25prep"):
        assert found(admin, f"fulltext/{term}") == []
    assert {*samples.values(), percent, underscore} < set(found(admin, "like/%25"))
    assert set(found(admin, "like/lysate_b")) == {samples["like"]}


def test_filter_restricts_every_mode(admin: ApiClient, samples: dict[str, str]) -> None:
    only = "eClass eq 'Experiment'"
    assert found(admin, "Lysate", filter=only) == [samples["experiment"]]
    assert found(admin, "like/ysat", filter=only) == [samples["experiment"]]
    assert found(admin, "fulltext/lysate", filter=only) == [samples["experiment"]]
    assert found(admin, "exact/Lysate", filter="eClass eq 'Experiment'") == []
    assert search(admin, "fulltext/lysate", filter=only)["total"] == 1


def test_top_defaults_to_50_and_is_capped(admin: ApiClient) -> None:
    save(admin, *({"eClass": "Sample", "name": f"bulk {n}"} for n in range(60)))
    assert len(found(admin, "fulltext/bulk")) == 50
    assert search(admin, "fulltext/bulk", top=5000)["total"] == 60
    assert len(found(admin, "like/bulk", top=7)) == 7


@pytest.mark.parametrize("path", ["%20", "fulltext/%20%20", "exact/" + "x" * 257,
                                  "like/" + "y" * 300, "z" * 257])
def test_empty_or_over_long_terms_are_400(admin: ApiClient, path: str) -> None:
    assert_problem(admin.get(f"/api/search/{path}"), 400, "invalid_term")


def test_a_term_of_256_characters_is_searched(admin: ApiClient) -> None:
    assert search(admin, "fulltext/" + "w" * 256)["total"] == 0


@pytest.mark.parametrize(("options", "code"), [
    ({"$filter": "eClass eq"}, "invalid_filter"), ({"$filter": "nosuch eq 1"}, "invalid_filter"),
    ({"$top": "-1"}, "invalid_paging"), ({"$top": "many"}, "invalid_paging"),
    ({"$skip": "2"}, "validation_failed")])
def test_bad_options_are_400(admin: ApiClient, options: dict[str, str], code: str) -> None:
    for mode in ("", "exact/", "like/", "fulltext/"):
        response = admin.get(f"/api/search/{mode}x", query_string=options)
        assert_problem(response, 400, code, errors=True)


def test_anonymous_callers_are_401(client) -> None:
    for mode in ("", "exact/", "like/", "fulltext/"):
        assert_problem(client.get(f"/api/search/{mode}x"), 401, "not_authenticated")
    assert_problem(client.get("/api/query/freetext/x"), 401, "not_authenticated")


@pytest.mark.parametrize("mode", ["fulltext", "", "like", "exact"])
def test_top_zero_answers_the_count_alone(admin: ApiClient, samples: dict[str, str],
                                          mode: str) -> None:
    """$top=0 asks how many match: no rows, the total (Whoosh refuses a limit of 0: a 500)."""
    term = "LYS-1" if mode == "exact" else "lysate"
    body = search(admin, f"{mode}/{term}" if mode else term, top=0)
    assert body["data"] == [] and body["total"] >= 1
