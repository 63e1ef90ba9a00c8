"""The one placement rule (issue 33 §2) as a pure function: where each requested item goes,
or why not, with nothing read or written."""
from __future__ import annotations

from labapp.storage.allocation import (
    Move,
    Refusal,
    Request,
    Room,
    describe,
    plan_moves,
    stays,
)


def _box(**fields: object) -> Room:
    values: dict = {"id": "BOX", "status": "Active", "rows": 2, "columns": 2,
                    "capacity": None, **fields}
    return Room(**values)


def test_slots_asked_for_come_first_then_the_first_free_cells() -> None:
    box = _box(stored=1, occupied={"A1": "HELD"})
    plan = plan_moves({"BOX": box}, [Request(0, "BOX"), Request(1, "BOX", "a02"),
                                     Request(2, "BOX")])
    assert plan.outcomes == (Move(0, "BOX", "B1", True), Move(1, "BOX", "A2", True),
                             Move(2, "BOX", "B2", True))
    after = plan.rooms["BOX"]
    assert after.stored == 4 and after.occupied == {"A1": "HELD", "A2": 1, "B1": 0, "B2": 2}
    assert box.occupied == {"A1": "HELD"} and box.stored == 1  # the input is left alone


def test_a_slot_held_by_a_stored_item_or_an_earlier_request_is_refused() -> None:
    plan = plan_moves({"BOX": _box(stored=1, occupied={"A1": "HELD"})},
                      [Request(5, "BOX", "A1"), Request(6, "BOX", "B2"), Request(7, "BOX", "b2")])
    assert plan.outcomes == (Refusal(5, "slot_taken", "BOX", slot="A1", holder="HELD"),
                             Move(6, "BOX", "B2", True),
                             Refusal(7, "slot_taken", "BOX", slot="B2", holder=6))
    assert plan.rooms["BOX"].stored == 2  # refused requests take no room


def test_slots_and_room_freed_by_items_leaving_are_free() -> None:
    box, shelf = _box(capacity=1, stored=1, occupied={"A1": "OLD"}), _box(
        id="SHELF", rows=None, columns=None)
    plan = plan_moves({"BOX": box, "SHELF": shelf}, [
        Request(0, "BOX", "A1"),
        Request(1, "SHELF", id="OLD", location_id="BOX", position="A1")])
    assert plan.outcomes == (Move(0, "BOX", "A1", True), Move(1, "SHELF", None, True))
    assert plan.rooms["BOX"].occupied == {"A1": 0} and plan.rooms["BOX"].stored == 1
    out = plan_moves({"BOX": box}, [Request(0, "BOX", "A1"),
                                    Request(1, None, id="OLD", location_id="BOX",
                                            position="A1")])
    assert out.outcomes[0] == Move(0, "BOX", "A1", True)
    assert out.outcomes[1] == Move(1, None, None, True)


def test_items_may_swap_slots_within_their_box() -> None:
    box = _box(stored=2, occupied={"A1": "X", "A2": "Y"})
    plan = plan_moves({"BOX": box}, [Request(0, "BOX", "A2", "X", "BOX", "A1"),
                                     Request(1, "BOX", "A1", "Y", "BOX", "A2")])
    assert plan.outcomes == (Move(0, "BOX", "A2", True), Move(1, "BOX", "A1", True))
    assert plan.rooms["BOX"].stored == 2


def test_capacity_counts_what_is_stored_and_what_arrives() -> None:
    rack = _box(rows=None, columns=None, capacity=2, stored=1)
    plan = plan_moves({"BOX": rack}, [Request(0, "BOX"), Request(1, "BOX")])
    assert plan.outcomes == (Move(0, "BOX", None, True), Refusal(1, "full", "BOX", limit=2))
    grid = plan_moves({"BOX": _box(rows=1, columns=1)}, [Request(0, "BOX"), Request(1, "BOX")])
    assert grid.outcomes[1] == Refusal(1, "full", "BOX", limit=1)


def test_a_grid_with_room_but_no_free_cell() -> None:
    """Items stored without a slot count as room but hold no cell; a slot asked for may
    take the last cell before an item without one."""
    box = _box(rows=1, columns=2, capacity=3, stored=0, occupied={"A1": "X"})
    plan = plan_moves({"BOX": box}, [Request(0, "BOX"), Request(1, "BOX", "A2")])
    assert plan.outcomes == (Refusal(0, "no_free_slot", "BOX"), Move(1, "BOX", "A2", True))
    assert plan.rooms["BOX"].stored == 1


def test_an_item_staying_where_it_is_stays_even_in_an_inactive_location() -> None:
    shut = _box(status="Inactive", stored=1, occupied={"A1": "X"})
    plan = plan_moves({"BOX": shut}, [Request(0, "BOX", "a01", "X", "BOX", "A1"),
                                      Request(1, "BOX", "A2")])
    assert plan.outcomes == (Move(0, "BOX", "A1", False),
                             Refusal(1, "inactive", "BOX", status="Inactive"))
    assert stays(Request(0, "BOX", "A01", "X", "BOX", "A1"))
    assert not stays(Request(0, "BOX", "A2", "X", "BOX", "A1"))
    assert not stays(Request(0, "OTHER", None, "X", "BOX", "A1"))


def test_bad_slots_plates_and_a_slot_without_a_location() -> None:
    rooms = {"BOX": _box(), "SHELF": _box(id="SHELF", rows=None, columns=None)}
    plan = plan_moves(rooms, [Request(0, "BOX", "C1"), Request(1, "SHELF", "A1"),
                              Request(2, None, "A1"), Request(3, "BOX", plate_id="PLT1"),
                              Request(4, "BOX", "A1")])
    assert plan.outcomes[:4] == (
        Refusal(0, "not_a_slot", "BOX", slot="C1", rows=2, columns=2),
        Refusal(1, "no_grid", "SHELF", slot="A1"), Refusal(2, "no_location", slot="A1"),
        Refusal(3, "on_plate", "BOX", plate_id="PLT1"))
    assert plan.outcomes[4] == Move(4, "BOX", "A1", True)


def test_a_request_all_or_nothing_reports_a_bad_slot_before_a_conflict() -> None:
    plan = plan_moves({"BOX": _box(occupied={"A1": "X"}, stored=1)},
                      [Request(0, "BOX", "A1"), Request(1, "BOX", "Z9")])
    first = plan.first_refusal()
    assert first is not None and (first.index, first.reason) == (1, "not_a_slot")
    assert plan_moves({"BOX": _box()}, [Request(0, "BOX")]).first_refusal() is None


def test_refusals_in_words_never_name_a_hidden_holder() -> None:
    taken = Refusal(3, "slot_taken", "BOX", slot="A1", holder="SAM00002")
    assert describe(taken, "Box 3", "Serum 1") == "slot A1 of Box 3 is taken by Serum 1"
    assert describe(taken, "Box 3", None) == "slot A1 of Box 3 is occupied"
    assert describe(Refusal(3, "slot_taken", "BOX", slot="A1", holder=2), "Box 3") \
        == "slot A1 of Box 3 is also given to row 2"
    assert describe(Refusal(0, "full", "BOX", limit=1), "Box 3") \
        == "Box 3 is full (it holds at most 1 item)"
    assert describe(Refusal(0, "inactive", "BOX", status="Inactive"), "Box 3") \
        == "Box 3 is Inactive; nothing can be stored in it"
    for reason in ("no_location", "on_plate", "no_grid", "not_a_slot", "no_free_slot"):
        assert "BOX" not in describe(Refusal(0, reason, "BOX", slot="Z9"), "Box 3")


def test_filling_the_largest_grid_takes_the_free_cells_in_order() -> None:
    """10,000 items (a check-in's most) into a 702 × 999 grid whose first cells are taken:
    each takes the next free cell (how fast, without walking the grid again per item, is
    measured in ``bench/guards.py``)."""
    taken = {f"A{column}": "X" for column in range(1, 1000)}
    room = _box(rows=702, columns=999, stored=len(taken), occupied=taken)
    plan = plan_moves({"BOX": room}, [Request(index, "BOX") for index in range(10_000)])
    assert plan.outcomes[0] == Move(0, "BOX", "B1", True)
    assert plan.outcomes[-1] == Move(9_999, "BOX", "L10", True)
