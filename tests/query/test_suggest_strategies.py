"""The fast paths of the suggestions answer exactly what the plain definition answers.

Entity suggestions read exact and prefix matches from index ranges, then contains matches
from the search text's candidates or, when there are too many, by probing each column, then
asking for each column's own candidates, and scanning what is left; field
suggestions walk an index over distinct values and fall back to a scan. Each path is forced
here (by shrinking its limits) and compared with an oracle written from decisions §8 and
docs/decisions/suggestions.md, over every Sample the admin can list.
"""
from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest

from labapp.query import entity_suggest, suggest
from tests.conftest import DEFAULT_DEPARTMENT, ApiClient
from tests.entities.conftest import body_of, save

ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
WORDS = ("Alpha", "beta", "GAMMA", "delta", "Sigma", "sample", "Assay", "x-ray", "Lysate")


@pytest.fixture
def away(department: Callable[..., str]) -> str:
    return department("Elsewhere")


@pytest.fixture
def samples(admin: ApiClient, away: str) -> list[dict[str, Any]]:
    """90 samples with mixed-case names, some barcodes, a name equal to another's barcode,
    and one in three in a department the member cannot read."""
    chance = random.Random(5)
    items = []
    for number in range(90):
        word = chance.choice(WORDS)
        item = {"eClass": "Sample", "id": f"SQ-{number:03d}",
                "name": f"{word} {chance.randint(0, 99)}"}
        if number % 2:
            item["barcode"] = f"BC{number:03d}{chance.choice('xyzXYZ')}"
        if number % 3 == 0:
            item["departmentID"] = away
        items.append(item)
    items[10]["name"] = "bc001x"
    save(admin, *items)
    listed = body_of(admin.get("/api/entity/Sample", query_string={"$top": "500"}), 200)
    return listed["data"]


def oracle(rows: list[dict[str, Any]], query: str) -> list[str]:
    """The ids decisions §8 and docs/decisions/suggestions.md ask for: best match of id, name
    or barcode (exact, prefix, contains; ASCII case folded), then the matched text, then id;
    at most 20."""
    needle = query.translate(ASCII_LOWER)
    ranked = []
    for row in rows:
        ranks = []
        for value in (row["id"], row["name"], row.get("barcode") or ""):
            value = value.translate(ASCII_LOWER)
            if needle in value:
                ranks.append((0 if value == needle else 1 if value.startswith(needle) else 2,
                              value, row["id"]))
        if ranks:
            ranked.append(min(ranks))
    return [rank[2] for rank in sorted(ranked)[:20]]


QUERIES = ("s", "A", "x", "q", "Y", "a 1", "ta", "ta 2", "-0", "sq-00", "SQ-042", "bc0",
           "bc001x", "BC011Y", "lysate", "ray", "ma 5", "zzz", "99", "1", "5\x1fs", "%", "_")

STRATEGIES = {
    "search-table candidates": {},
    "too many candidates, probes": {"MAX_CANDIDATES": 1},
    "too many candidates, probes stop early": {"MAX_CANDIDATES": 1, "PROBE_ROWS": 40},
    "too many candidates, probes never finish": {"MAX_CANDIDATES": 1, "PROBE_ROWS": 1},
    # Every row a candidate, then each column's own candidates (the query between the right
    # separators of the search text).
    "candidates per column": {"_ANYWHERE": "%", "MAX_CANDIDATES": 60, "PROBE_ROWS": 1},
}


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_path_ranks_like_the_definition(admin: ApiClient, member: Callable[..., ApiClient],
                                              samples: list[dict[str, Any]], strategy: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in STRATEGIES[strategy].items():
        monkeypatch.setattr(entity_suggest, name, value)
    alice = member("alice")
    home = [row for row in samples if row["departmentID"] == DEFAULT_DEPARTMENT]
    assert 0 < len(home) < len(samples)

    for query in QUERIES:
        for api, rows in ((admin, samples), (alice, home)):
            found = body_of(api.get(f"/api/query/suggest/entity/Sample/{quote(query)}"), 200)
            assert [entity["id"] for entity in found] == oracle(rows, query), query


def test_renamed_rebarcoded_and_deleted_entities_are_found_by_what_they_hold_now(
        admin: ApiClient, department: Callable[..., str]) -> None:
    def ids(eclass: str, query: str) -> list[str]:
        return [entity["id"] for entity in body_of(
            admin.get(f"/api/query/suggest/entity/{eclass}/{quote(query)}"), 200)]

    save(admin, {"eClass": "Sample", "id": "FTS-1", "name": "Quasar nebula"})
    assert ids("Sample", "asar neb") == ["FTS-1"]

    save(admin, {"eClass": "Sample", "id": "FTS-1", "name": "Pulsar remnant",
                 "barcode": "QX-778899"}, status=200)
    assert ids("Sample", "asar neb") == []
    assert ids("Sample", "lsar rem") == ["FTS-1"]
    assert ids("Sample", "x-7788") == ["FTS-1"]

    gone = department("Magnetar wing")
    assert ids("Department", "gnetar") == [gone]
    assert admin.delete(f"/api/department/{gone}").status_code == 204
    assert ids("Department", "gnetar") == []


@pytest.mark.parametrize("name", ["x\U0010FFFF", "a\ud7ff"])
def test_prefixes_ending_in_the_last_code_points_match(admin: ApiClient, name: str) -> None:
    save(admin, {"eClass": "Sample", "id": "CP-1", "name": name + " tail"},
         {"eClass": "Sample", "id": "CP-2", "name": name[0] + "\ue000"})

    found = body_of(admin.get(f"/api/query/suggest/entity/Sample/{quote(name)}"), 200)
    assert [entity["id"] for entity in found] == ["CP-1"]


FIELDS = ("unit", "concentrationUnit", "status", "type", "name", "well")


@pytest.fixture
def units(admin: ApiClient, away: str) -> None:
    save(admin, *({"eClass": "Sample", "id": f"UW-{number:02d}", "name": f"Unit walk {number}",
                   "unit": ("mL", "µL", "mg", "cells", "L", "")[number % 6],
                   "concentrationUnit": ("mg/mL", None, "M")[number % 3],
                   "status": ("Initial", "Completed")[number % 2],
                   "type": ("Blood", "Tissue", "Other")[number % 3],
                   "well": f"A{number % 7}", "amount": number,
                   **({"departmentID": away} if number % 4 == 0 else {})}
                  for number in range(40)))


@pytest.mark.parametrize("field", FIELDS)
def test_walking_the_index_answers_what_the_scan_answers(
        admin: ApiClient, member: Callable[..., ApiClient], units: None, field: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    alice = member("alice")

    def answers() -> list[Any]:
        return [body_of(api.get(f"/api/query/suggest/field/Sample/{field}{path}",
                                query_string=query), 200)
                for api in (admin, alice)
                for path in ("", "/l", "/M", "/zz")
                for query in ({}, {"$filter": "amount gt 20"})]

    walked = answers()
    monkeypatch.setattr(suggest, "WALK_STEPS", 2)
    assert answers() == walked
    monkeypatch.setattr(suggest, "_walkable", lambda column, common: False)
    assert answers() == walked
    assert any(walked)
