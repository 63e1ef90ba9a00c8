"""The one rule of where samples and plates may go (decisions §10), as a pure function.

Check-in (:mod:`labapp.storage.checkin`), the entity batch's planner
(:mod:`labapp.storage.placement`) and the import's dry run (:mod:`labapp.imports.rows`) all
ask :func:`plan_moves`, so they accept and refuse the same moves for the same reasons. It
reads nothing: the caller gives each location as a :class:`Room` (its grid, capacity, the
items stored there and the slots they hold) and each item as a :class:`Request`; every
request gets a :class:`Move` or a :class:`Refusal` that names it by its index, as data.

The rule, per request in order:

- an item asked to stay where it is (its location, no slot or its own slot) stays, also in
  a location that is no longer Active;
- a sample on a plate is stored with its plate; a slot needs a location;
- the location must be Active; a slot must be a cell of its grid;
- an item arriving needs room (``capacity``, or the grid's cells when smaller), counting
  what is stored there, minus the items of the same plan that leave it;
- a slot asked for must be free: not held by a stored item that stays, nor by an earlier
  request; the slots of items that leave (or move within the location) are free;
- an item arriving in a grid without a slot takes the first free cell, row by row, once
  every request asking for a slot has its own.

Refused requests take neither room nor a slot. Each face words a refusal its own way: the
API by its problem codes (``[i]`` and ``entities[i]`` in the detail), the import in words
through :func:`describe`.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from labapp.storage import slots
from labapp.storage.service import has_grid, limit_of

# Who holds a slot: a stored item's id, or the index of an earlier request of the plan (a
# row of an import, whose item has no id yet).
Holder = str | int
Reason = Literal["no_location", "on_plate", "inactive", "no_grid", "not_a_slot", "full",
                 "slot_taken", "no_free_slot"]
# Reasons that are about the request's own input (400 on the API); the others are 409.
INPUT_REASONS: frozenset[Reason] = frozenset({"no_location", "no_grid", "not_a_slot"})


@dataclass(frozen=True, slots=True)
class Room:
    """A location as the rule sees it: its limits and what it holds now."""

    id: str
    status: str
    rows: int | None
    columns: int | None
    capacity: int | None
    stored: int = 0
    occupied: Mapping[str, Holder] = field(default_factory=dict)

    @property
    def grid(self) -> bool:
        return has_grid(self.rows, self.columns)

    @property
    def limit(self) -> int | None:
        return limit_of(self.capacity, self.rows, self.columns)


@dataclass(frozen=True, slots=True)
class Request:
    """One item asked to be at ``target`` (None: stored nowhere), in slot ``wanted`` (as
    written) if given; ``location_id``/``position`` are where it is now."""

    index: int
    target: str | None
    wanted: str | None = None
    id: str | None = None
    location_id: str | None = None
    position: str | None = None
    plate_id: str | None = None


@dataclass(frozen=True, slots=True)
class Move:
    """Where a request's item goes; ``moves`` is False for an item that stays as it is."""

    index: int
    location_id: str | None
    position: str | None
    moves: bool


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a request's item may not go where it was asked to, with what a message needs."""

    index: int
    reason: Reason
    location_id: str | None = None
    slot: str | None = None  # the slot asked for (canonical once it is a cell of the grid)
    holder: Holder | None = None  # who holds the slot asked for
    rows: int | None = None
    columns: int | None = None
    limit: int | None = None
    status: str | None = None
    plate_id: str | None = None

    @property
    def about_input(self) -> bool:
        """Whether the request itself is wrong (a 400 on the API) rather than the place."""
        return self.reason in INPUT_REASONS


@dataclass(frozen=True, slots=True)
class Allocation:
    """The outcome of every request (in their order) and each room after the moves."""

    outcomes: tuple[Move | Refusal, ...]
    rooms: Mapping[str, Room]

    @property
    def refusals(self) -> list[Refusal]:
        return [outcome for outcome in self.outcomes if isinstance(outcome, Refusal)]

    def first_refusal(self) -> Refusal | None:
        """The refusal a request that is all or nothing reports: one about the request's
        own input first, else the first one."""
        ranked = [(not outcome.about_input, order, outcome)
                  for order, outcome in enumerate(self.outcomes) if isinstance(outcome, Refusal)]
        return min(ranked, key=lambda rank: rank[:2])[2] if ranked else None


@dataclass
class _State:
    """A room while the plan fills it."""

    room: Room
    stored: int
    taken: dict[str, Holder]
    changed: bool = False
    free: Iterator[str] | None = None  # the free cells in filling order, read as they go

    def next_free(self) -> str | None:
        """The first free cell after those handed out (one walk over the grid however many
        items it fills; ``taken`` is read live, so cells given meanwhile are skipped)."""
        if self.free is None:
            self.free = (cell for cell in slots.cells(self.room.rows or 0, self.room.columns or 0)
                         if cell not in self.taken)
        return next(self.free, None)


def stays(request: Request) -> bool:
    """Whether a request asks its item to stay where it is: its own location, and no slot
    or the slot it holds (however spelled: ``b02`` is ``B2``)."""
    if request.target is None or request.target != request.location_id:
        return False
    if request.wanted is None:
        return True
    cell = slots.parse(request.wanted)
    return cell is not None and slots.label(*cell) == request.position


def _check(request: Request, rooms: Mapping[str, Room]) -> Move | Refusal | str | None:
    """What a request is before any room is counted: a :class:`Move` when it stays, a
    :class:`Refusal`, or the canonical slot it asks for (None when none) to be planned."""
    if stays(request):
        return Move(request.index, request.target, request.position, False)
    if request.target is None:
        if request.wanted is not None:
            return Refusal(request.index, "no_location", slot=request.wanted)
        return Move(request.index, None, None, request.location_id is not None)
    room = rooms[request.target]
    canonical = None
    if request.wanted is not None:
        if not room.grid:
            return Refusal(request.index, "no_grid", room.id, slot=request.wanted)
        canonical = slots.canonical(request.wanted, room.rows or 0, room.columns or 0)
        if canonical is None:
            return Refusal(request.index, "not_a_slot", room.id, slot=request.wanted,
                           rows=room.rows, columns=room.columns)
    if request.plate_id is not None:
        return Refusal(request.index, "on_plate", room.id, plate_id=request.plate_id)
    if room.status != "Active":
        return Refusal(request.index, "inactive", room.id, status=room.status)
    return canonical


def plan_moves(rooms: Mapping[str, Room], requests: Sequence[Request]) -> Allocation:
    """Decide every request by the rule of the module docstring. ``rooms`` holds at least
    every target; a room a request leaves is counted only when it is among them."""
    checked = [_check(request, rooms) for request in requests]
    states: dict[str, _State] = {}

    def state(location_id: str) -> _State:
        if location_id not in states:
            room = rooms[location_id]
            states[location_id] = _State(room, room.stored, dict(room.occupied))
        return states[location_id]

    # Items that move away free their slot (and, leaving the location, its room) first.
    for request, outcome in zip(requests, checked, strict=True):
        refused = isinstance(outcome, Refusal)
        moving = outcome.moves if isinstance(outcome, Move) else not refused
        if not moving or request.location_id is None or request.location_id not in rooms:
            continue
        left = state(request.location_id)
        if request.position is not None and request.id is not None \
                and left.taken.get(request.position) == request.id:
            del left.taken[request.position]
            left.changed = True
        if request.target != request.location_id:
            left.stored -= 1
            left.changed = True
    outcomes: list[Move | Refusal | None] = [
        outcome if isinstance(outcome, Move | Refusal) else None for outcome in checked]
    unslotted: list[tuple[int, _State]] = []
    for position, (request, outcome) in enumerate(zip(requests, checked, strict=True)):
        if isinstance(outcome, Move | Refusal) or request.target is None:
            continue
        target = state(request.target)
        room, arriving = target.room, request.location_id != request.target
        if arriving and room.limit is not None and target.stored + 1 > room.limit:
            outcomes[position] = Refusal(request.index, "full", room.id, limit=room.limit)
            continue
        if outcome is not None:
            holder = target.taken.get(outcome)
            if holder is not None:
                outcomes[position] = Refusal(request.index, "slot_taken", room.id,
                                             slot=outcome, holder=holder)
                continue
            target.taken[outcome] = request.index
            outcomes[position] = Move(request.index, room.id, outcome, True)
        elif room.grid:
            unslotted.append((position, target))
        else:
            outcomes[position] = Move(request.index, room.id, None, True)
        target.stored += int(arriving)
        target.changed = True
    for position, target in unslotted:  # after every slot asked for is given
        request, room = requests[position], target.room
        free = target.next_free()
        if free is None:
            outcomes[position] = Refusal(request.index, "no_free_slot", room.id)
            target.stored -= int(request.location_id != request.target)
            continue
        target.taken[free] = request.index
        outcomes[position] = Move(request.index, room.id, free, True)
    after = dict(rooms)
    for location_id, filled in states.items():
        if filled.changed:
            after[location_id] = replace(filled.room, stored=filled.stored,
                                         occupied=filled.taken)
    decided = tuple(outcome for outcome in outcomes if outcome is not None)
    if len(decided) != len(requests):
        raise AssertionError("plan_moves left a request undecided")
    return Allocation(decided, after)


def describe(refusal: Refusal, location: str, holder: str | None = None) -> str:
    """A refusal in words for a person: ``location`` is how the location is named to them
    (its name), ``holder`` the name of the item holding the slot when they may see it
    (None: an item they may not see, never named; an int holder is an earlier request,
    told as a row)."""
    reason = refusal.reason
    if reason == "no_location":
        return "a slot needs a location"
    if reason == "on_plate":
        return "the sample is on a plate; it is stored with its plate"
    if reason == "inactive":
        return f"{location} is {refusal.status}; nothing can be stored in it"
    if reason == "no_grid":
        return f"{location} has no slots (no rows × columns grid)"
    if reason == "not_a_slot":
        return (f"{refusal.slot!r} is not a slot of {location} ({refusal.rows} rows × "
                f"{refusal.columns} columns)")
    if reason == "full":
        items = "item" if refusal.limit == 1 else "items"
        return f"{location} is full (it holds at most {refusal.limit} {items})"
    if reason == "no_free_slot":
        return f"{location} has no free slot left"
    if isinstance(refusal.holder, int):
        return f"slot {refusal.slot} of {location} is also given to row {refusal.holder}"
    if holder is None:
        return f"slot {refusal.slot} of {location} is occupied"
    return f"slot {refusal.slot} of {location} is taken by {holder}"
