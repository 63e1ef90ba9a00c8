"""``$orderby``, ``$select``, ``$top``/``$skip`` and the page, on both databases."""
from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select

from labapp.db import db
from labapp.errors import InvalidInput
from labapp.model import Sample
from labapp.model.registry import find_class
from labapp.query.filter import entity_fields
from labapp.query.listing import (
    PAGE_SIZE,
    Page,
    parse_orderby,
    parse_paging,
    parse_select,
)


def sample_fields():
    return entity_fields(find_class("Sample"))


def ordered(text: str | None) -> list[str]:
    clauses = parse_orderby(text, sample_fields(), Sample.id)
    query = (select(Sample.id).where(func.lower(Sample.id).startswith("tq"))
             .order_by(*clauses))
    return list(db.session.scalars(query))


@pytest.mark.usefixtures("rows")
@pytest.mark.parametrize(("text", "expected"), [
    (None, ["TQ1", "TQ2", "TQ3", "TQ4", "TQ5"]),
    ("", ["TQ1", "TQ2", "TQ3", "TQ4", "TQ5"]),
    ("amount", ["TQ3", "TQ2", "TQ1", "TQ5", "TQ4"]),
    ("amount asc", ["TQ3", "TQ2", "TQ1", "TQ5", "TQ4"]),
    ("Amount ASC", ["TQ3", "TQ2", "TQ1", "TQ5", "TQ4"]),
    ("amount desc", ["TQ4", "TQ5", "TQ1", "TQ2", "TQ3"]),
    ("AMOUNT   DESC", ["TQ4", "TQ5", "TQ1", "TQ2", "TQ3"]),
    ("type, amount desc", ["TQ4", "TQ1", "TQ5", "TQ2", "TQ3"]),
    (" type desc ,amount", ["TQ3", "TQ2", "TQ5", "TQ1", "TQ4"]),
    ("dateTaken desc, id desc", ["TQ4", "TQ3", "TQ2", "TQ1", "TQ5"]),
    ("createdUtc", ["TQ4", "TQ5", "TQ1", "TQ2", "TQ3"]),
    ("createdutc desc", ["TQ3", "TQ2", "TQ1", "TQ5", "TQ4"]),
    ("attributes.batch", ["TQ5", "TQ1", "TQ2", "TQ3", "TQ4"]),
    ("attributes/batch desc", ["TQ3", "TQ4", "TQ2", "TQ1", "TQ5"]),
    ("type, type desc, amount", ["TQ1", "TQ4", "TQ5", "TQ3", "TQ2"]),
    ("id desc", ["TQ5", "TQ4", "TQ3", "TQ2", "TQ1"]),
])
def test_orderby_sorts_with_a_stable_tiebreaker(text: str | None, expected: list[str]) -> None:
    assert ordered(text) == expected


def test_orderby_always_ends_with_the_tiebreaker(app) -> None:
    with app.app_context():
        assert parse_orderby("  ", sample_fields(), Sample.id) == [Sample.id]
        assert len(parse_orderby("name, name desc", sample_fields(), Sample.id)) == 3


def _invalid(call, *args: Any) -> InvalidInput:
    with pytest.raises(InvalidInput) as caught:
        call(*args)
    return caught.value


@pytest.mark.parametrize(("text", "detail"), [
    ("nmae", "Unknown field 'nmae' at position 0"),
    ("name, nmae desc", "Unknown field 'nmae' at position 6"),
    ("name sideways", "Expected 'field [asc|desc]', not 'name sideways' at position 0"),
    ("name asc desc", "Expected 'field [asc|desc]', not 'name asc desc' at position 0"),
    ("name, ", "Empty item in $orderby at position 6"),
    (",name", "Empty item in $orderby at position 0"),
    ("attributes desc", "Cannot order by JSON field 'attributes' at position 0"),
    ("parentID/name", "Navigation 'parentID/name' is not supported; only attributes.<key> is "
                      "at position 0"),
    ("attributes.a.b", "Invalid attribute key 'a.b' at position 0"),
    ("name;drop", "Invalid field name 'name;drop' at position 0"),
    ("attributes.a'b", "Invalid field name 'attributes.a'b' at position 0"),
])
def test_orderby_rejects_bad_input(app, text: str, detail: str) -> None:
    with app.app_context():
        error = _invalid(parse_orderby, text, sample_fields(), Sample.id)
    assert (error.status, error.code, error.detail) == (400, "invalid_orderby", detail)
    assert error.errors == [{"field": "$orderby", "message": detail}]


@pytest.mark.parametrize(("text", "expected"), [
    (None, []),
    ("", []),
    ("*", []),
    ("name, amount", ["id", "eClass", "name", "amount"]),
    ("NAME,Amount , createdutc", ["id", "eClass", "name", "amount", "createdUtc"]),
    ("id, name, ID, eclass, name", ["id", "eClass", "name"]),
    ("attributes", ["id", "eClass", "attributes"]),
    ("attributes.ph, Attributes/batch, attributes.ph",
     ["id", "eClass", "attributes.ph", "attributes.batch"]),
    ("attributes.a-b", ["id", "eClass", "attributes.a-b"]),
])
def test_select_gives_canonical_names(app, text: str | None, expected: list[str]) -> None:
    with app.app_context():
        assert parse_select(text, sample_fields()) == expected


def test_select_always_fields_are_configurable(app) -> None:
    with app.app_context():
        assert parse_select("name", sample_fields(), always=()) == ["name"]
        assert parse_select("name", sample_fields(), always=("id",)) == ["id", "name"]


@pytest.mark.parametrize(("text", "detail"), [
    ("nmae", "Unknown field 'nmae' at position 0"),
    ("name,,amount", "Empty item in $select at position 5"),
    ("name, startDate", "Unknown field 'startDate' at position 6"),
    ("parentID/name", "Navigation 'parentID/name' is not supported; only attributes.<key> is "
                      "at position 0"),
    ("attributes.a'b", "Invalid field name 'attributes.a'b' at position 0"),
    ("name desc", "Invalid field name 'name desc' at position 0"),
    ("passwordHash", "Unknown field 'passwordHash' at position 0"),
])
def test_select_rejects_bad_input(app, text: str, detail: str) -> None:
    with app.app_context():
        error = _invalid(parse_select, text, sample_fields())
    assert (error.status, error.code, error.detail) == (400, "invalid_select", detail)
    assert error.errors == [{"field": "$select", "message": detail}]


@pytest.mark.parametrize(("top", "skip", "max_top", "expected"), [
    (None, None, PAGE_SIZE, (500, 0)),
    ("", "", PAGE_SIZE, (500, 0)),
    ("10", "20", PAGE_SIZE, (10, 20)),
    (10, 20, PAGE_SIZE, (10, 20)),
    (" 7 ", None, PAGE_SIZE, (7, 0)),
    ("0", "0", PAGE_SIZE, (0, 0)),
    ("500", "1000000", PAGE_SIZE, (500, 1000000)),
    ("1000", None, PAGE_SIZE, (500, 0)),
    ("150", None, 100, (100, 0)),
    (None, "5", 100, (100, 5)),
])
def test_paging(top, skip, max_top: int, expected: tuple[int, int]) -> None:
    assert parse_paging(top, skip, max_top) == expected


@pytest.mark.parametrize(("top", "skip", "detail"), [
    ("-1", None, "$top must be a non-negative integer, not '-1'"),
    ("abc", None, "$top must be a non-negative integer, not 'abc'"),
    ("1.5", None, "$top must be a non-negative integer, not '1.5'"),
    ("1e3", None, "$top must be a non-negative integer, not '1e3'"),
    ("+5", None, "$top must be a non-negative integer, not '+5'"),
    (-3, None, "$top must be a non-negative integer, not '-3'"),
    (True, None, "$top must be a non-negative integer, not 'True'"),
    (None, "-5", "$skip must be a non-negative integer, not '-5'"),
    (None, "ten", "$skip must be a non-negative integer, not 'ten'"),
    (None, "9" * 20, "$skip is too large"),
])
def test_paging_rejects_bad_input(top, skip, detail: str) -> None:
    error = _invalid(parse_paging, top, skip)
    field = "$top" if top is not None else "$skip"
    assert (error.status, error.code, error.detail) == (400, "invalid_paging", detail)
    assert error.errors == [{"field": field, "message": detail}]


def test_page_next_skip_always_advances_by_the_page_size() -> None:
    page = Page(data=[{"id": "TQ1"}], total=1200, skip=500)
    assert page.next_skip == 1000
    assert page.to_json() == {"data": [{"id": "TQ1"}], "total": 1200, "nextSkip": 1000}
    assert Page(data=[], total=3, skip=0).to_json() == {"data": [], "total": 3,
                                                        "nextSkip": PAGE_SIZE}
    assert Page(data=[], total=0, skip=40, size=20).next_skip == 60
