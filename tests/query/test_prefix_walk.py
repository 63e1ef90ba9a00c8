"""``startswith`` on a text column: ASCII case ignored on both databases, and a page ordered
by that column starts its walk of the column's index at the prefix.

At a million samples PostgreSQL's saved-list widget (``startswith(name,'S')`` ordered by name,
10 rows) walked ``ix_entity_name`` from its first entry and removed ~870,000 rows before the
first "S" (bench/runs/2026-11-25-million.md): the match alone gives the planner no start. The bounds
implied by the match (from the prefix in upper case to the successor of it in lower case)
are added where the column sorts by code point, as SQLite's ``BINARY`` and this project's
PostgreSQL databases (``C.UTF-8``) do.
"""
from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import event, func, insert, select, text

from labapp.access.grant_sets import actor_for
from labapp.db import db
from labapp.entities.loading import list_entities
from labapp.model import Entity, Sample, User
from labapp.model.registry import find_class
from labapp.query.textmatch import code_point_order, prefix_bounds
from tests.conftest import BACKEND
from tests.query.conftest import _add

NAMES = {"PW1": "Sample 1", "PW2": "sample 2", "PW3": "SAMPLE 3", "PW4": "sAmple 4",
         "PW5": "Sz", "PW6": "s", "PW7": "t", "PW8": "R", "PW9": "Émile", "PW10": "émile",
         "PW11": "S%", "PW12": "Ša", "PW13": "`s", "PW14": "Ta"}
FILLER = 3000  # names before "S", for the plan: the walk must not read them


@pytest.fixture
def named(app: Flask) -> Any:
    with app.app_context():
        for entity_id, name in NAMES.items():
            _add(Sample, id=entity_id, name=name, status="Initial", type="Other",
                 attributes={})
        db.session.flush()
        yield actor_for(db.session.get(User, "admin"), method="bearer")


def page_ids(actor: Any, filter_text: str, orderby: str = "name") -> list[str]:
    page = list_entities(actor, find_class("Sample"), orderby=orderby, top="100",
                         filter_text=f"({filter_text}) and startswith(id, 'PW')")
    return [row["id"] for row in page.data]


@pytest.mark.parametrize(("filter_text", "expected"), [
    ("startswith(name, 's')", {"PW1", "PW2", "PW3", "PW4", "PW5", "PW6", "PW11"}),
    ("startswith(name, 'SAMPLE')", {"PW1", "PW2", "PW3", "PW4"}),
    ("startswith(name, 'S%')", {"PW11"}),
    ("startswith(name, 'é')", {"PW10"}),  # ASCII letters only: É is another letter
    ("startswith(name, 'É')", {"PW9"}),
    ("startswith(name, '')", set(NAMES)),
    ("not startswith(name, 's')", set(NAMES) - {"PW1", "PW2", "PW3", "PW4", "PW5", "PW6",
                                                "PW11"}),
    ("contains(name, 'MPL')", {"PW1", "PW2", "PW3", "PW4"}),
    ("endswith(name, 'MILE')", {"PW9", "PW10"}),
])
def test_matches_ignore_ascii_case_alike_on_both_databases(
        named: Any, filter_text: str, expected: set[str]) -> None:
    assert set(page_ids(named, filter_text)) == expected


def test_a_prefix_page_keeps_the_order_of_the_column(named: Any) -> None:
    matches = [entity_id for entity_id, name in sorted(NAMES.items(), key=lambda item: (
        item[1].encode(), item[0])) if name.lower().startswith("s")]
    assert page_ids(named, "startswith(name, 's')") == matches
    assert page_ids(named, "startswith(name, 's')", "name desc") == list(reversed(matches))


def test_bounds_hold_every_case_variant_of_the_prefix(app: Flask) -> None:
    with app.app_context():
        low, high = (bound.right.value for bound in prefix_bounds(Entity.name, "sa1"))
        assert (low, high) == ("SA1", "sa2")
        for variant in ("SA1", "Sa1", "sA1", "sa1", "sa1\U0010ffff"):
            assert low <= variant < high
        assert [bound.right.value for bound in prefix_bounds(Entity.name, "")] == [""]
        assert code_point_order(BACKEND)


def test_a_page_ordered_by_name_walks_the_name_index_from_the_prefix(
        app: Flask, named: Any) -> None:
    now = datetime.now(UTC)
    db.session.execute(insert(Entity.__table__), [
        {"id": f"PWF{number:05d}", "eclass": "Sample", "name": f"Filler {number:05d}",
         "status": "Initial", "type": "Other", "attributes": {}, "version": 1,
         "created_by": "admin", "modified_by": "admin",
         "created_utc": now, "modified_utc": now} for number in range(FILLER)])
    db.session.execute(insert(Sample.__table__),
                       [{"id": f"PWF{number:05d}"} for number in range(FILLER)])
    db.session.execute(text("ANALYZE"))
    sent: list[tuple[str, Any]] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if "ORDER BY entity.name" in statement:
            sent.append((statement, parameters))
    event.listen(db.engine, "before_cursor_execute", record)
    try:
        list_entities(named, find_class("Sample"), orderby="name", top="10",
                      filter_text="startswith(name, 's')")
    finally:
        event.remove(db.engine, "before_cursor_execute", record)
    assert len(sent) == 1, sent
    statement, parameters = sent[0]
    explain = "EXPLAIN " if BACKEND == "postgresql" else "EXPLAIN QUERY PLAN "
    plan = "\n".join(str(row[-1]) for row in db.session.connection().exec_driver_sql(
        explain + statement, parameters))
    if BACKEND == "postgresql":
        assert re.search(r"Index Scan using ix_entity_name on entity.*\n.*Index Cond: "
                         r"\(+name\)?(::text)? >= 'S'", plan), plan
    else:
        assert "ix_entity_name (name>? AND name<?)" in plan, plan
    assert db.session.scalar(select(func.count()).select_from(Sample)) >= FILLER
