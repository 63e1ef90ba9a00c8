"""The sequence service: the spec's examples, through the service and through entity creation."""
from __future__ import annotations

import pytest
from flask import Flask

from labapp.db import transaction
from labapp.errors import InvalidInput
from labapp.sequences.service import draw_apart, next_id, next_ids, save_sequence
from tests.conftest import ApiClient


def test_prefix_p_with_four_digits_starts_at_p0001(app: Flask) -> None:
    with app.app_context(), transaction():
        sequence, created = save_sequence("MYSEQ", {"prefix": "P", "min_digits": 4})
        assert created and sequence.next_value == 1
        assert next_ids("MYSEQ", 2) == ["P0001", "P0002"]
        assert next_id("MYSEQ") == "P0003"


def test_next_value_1000_starts_at_p1000(app: Flask) -> None:
    with app.app_context(), transaction():
        save_sequence("MYSEQ", {"prefix": "P", "min_digits": 4, "next_value": 1000})
        assert next_ids("MYSEQ", 3) == ["P1000", "P1001", "P1002"]


def test_numbers_grow_past_min_digits(app: Flask) -> None:
    with app.app_context(), transaction():
        save_sequence("WIDE", {"prefix": "W", "min_digits": 2, "next_value": 99})
        assert next_ids("WIDE", 2) == ["W99", "W100"]


def test_a_rolled_back_draw_is_drawn_again(app: Flask) -> None:
    """A draw is part of its transaction: undone with it, so committed values leave no gap."""
    with app.app_context(), transaction():
        save_sequence("RB", {"prefix": "R", "min_digits": 1})
    with pytest.raises(RuntimeError), app.app_context(), transaction():
        assert next_id("RB") == "R1"
        raise RuntimeError("abandon the unit of work")
    with app.app_context(), transaction():
        assert next_id("RB") == "R1"


def test_unknown_sequence_is_invalid_input(app: Flask) -> None:
    with app.app_context(), transaction(), pytest.raises(InvalidInput):
        next_ids("NO-SUCH-SEQUENCE")


def test_a_draw_apart_takes_the_next_values_and_the_next_draw_goes_on_after_them(
        app: Flask) -> None:
    """An import's ids are drawn in a unit of their own (``draw_apart``), as ``next_ids``
    draws them; the block is formatted as it is handed out."""
    with app.app_context(), transaction():
        save_sequence("APART", {"prefix": "A", "min_digits": 3})
    with app.app_context():
        drawn = draw_apart("APART", 3)
    assert (drawn.sequence_id, list(drawn)) == ("APART", ["A001", "A002", "A003"])
    with app.app_context(), transaction():
        assert next_id("APART") == "A004"


def test_a_draw_apart_from_an_unknown_sequence_is_invalid_input(app: Flask) -> None:
    with app.app_context(), pytest.raises(InvalidInput):
        draw_apart("NO-SUCH-SEQUENCE", 2)


def test_only_sequence_attributes_may_be_saved(app: Flask) -> None:
    with app.app_context(), transaction(), pytest.raises(ValueError, match="id"):
        save_sequence("X", {"id": "Y"})


@pytest.mark.parametrize(("settings", "first"), [
    ({"prefix": "P", "minDigits": 4}, "P0001"),
    ({"prefix": "P", "minDigits": 4, "nextValue": 1000}, "P1000"),
])
def test_entity_ids_come_from_the_named_sequence(admin: ApiClient, settings: dict[str, object],
                                                 first: str) -> None:
    assert admin.post("/api/sequence", json={"id": "MYSEQ", **settings}).status_code == 201
    response = admin.post("/api/entity", json={"entities": [
        {"eClass": "Sample", "id": "!MYSEQ"}, {"eClass": "Sample", "id": "#s!MYSEQ"}]})
    assert response.status_code == 201, response.get_json()
    number = int(first[1:])
    assert [entity["id"] for entity in response.get_json()["entities"]] == [
        first, f"P{number + 1:04d}"]
    listed = {sequence["id"]: sequence for sequence in admin.get("/api/sequence").get_json()}
    assert listed["MYSEQ"]["nextValue"] == number + 2
    assert listed["MYSEQ"]["pattern"] == f"P{number + 2:04d}"
