"""Sequences: the default one per class, adding and updating them, and atomic number generation."""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from labapp import changes
from labapp.db import db, side_unit
from labapp.errors import Conflict, InvalidInput
from labapp.model import Sequence
from labapp.model.registry import classes

DEFAULT_MIN_DIGITS = 5
# ``next_value`` is a 32-bit integer column (PostgreSQL ``integer``).
MAX_NEXT_VALUE = 2**31 - 1
EDITABLE = frozenset({"prefix", "min_digits", "next_value", "type"})
_ATTRIBUTES = {name: name for name in EDITABLE}


def ensure_default_sequences() -> list[str]:
    """Create the missing default sequence of every class with a prefix; return their ids."""
    existing = set(db.session.scalars(select(Sequence.id)))
    created = []
    for spec in classes():
        if spec.prefix and spec.name not in existing:
            db.session.add(Sequence(id=spec.name, prefix=spec.prefix,
                                    min_digits=DEFAULT_MIN_DIGITS, next_value=1))
            created.append(spec.name)
    db.session.flush()
    return created


def format_value(prefix: str, number: int, min_digits: int) -> str:
    """``prefix`` followed by ``number`` padded to at least ``min_digits`` digits."""
    return f"{prefix}{number:0{min_digits}d}"


def pattern_of(sequence: Sequence) -> str:
    """The readable example of a sequence: the value its next draw yields (``SAM00001``)."""
    return format_value(sequence.prefix, sequence.next_value, sequence.min_digits)


def list_sequences() -> list[Sequence]:
    """Every sequence, sorted by id."""
    return list(db.session.scalars(select(Sequence).order_by(Sequence.id)))


def save_sequence(sequence_id: str, values: Mapping[str, Any]) -> tuple[Sequence, bool]:
    """Add the sequence ``sequence_id`` or change the given attributes of it; flushes.

    ``values`` maps attributes of :data:`EDITABLE` to new values (already validated); a new
    sequence takes the defaults (empty prefix, 5 digits, numbering from 1) for the rest.
    Returns the sequence and whether it was created. The row is read under a lock (``FOR
    UPDATE``; SQLite's write lock is held from ``BEGIN IMMEDIATE``), so no draw can slip in
    between the check and the change.

    Raises :class:`ValueError` for an attribute outside :data:`EDITABLE`, and
    :class:`~labapp.errors.Conflict` (409) when ``next_value`` would go below the stored one
    (every value below it has been handed out) or when a concurrent request created the same
    sequence first.
    """
    sequence = db.session.get(Sequence, sequence_id, with_for_update=True,
                              populate_existing=True)
    created = sequence is None
    if sequence is None:
        sequence = Sequence(id=sequence_id, prefix="", min_digits=DEFAULT_MIN_DIGITS,
                            next_value=1, type=None)
        db.session.add(sequence)
    elif values.get("next_value", sequence.next_value) < sequence.next_value:
        raise Conflict(f"Sequence {sequence_id!r} has handed out every value below "
                       f"{sequence.next_value}; nextValue may not go below it.",
                       code="sequence_value_issued")
    changes.update(sequence, values, _ATTRIBUTES)
    try:
        db.session.flush()
    except IntegrityError:
        raise Conflict(f"Sequence {sequence_id!r} was created by another request meanwhile; "
                       "try again.", code="duplicate_id") from None
    return sequence, created


@dataclass(frozen=True, slots=True)
class Drawn:
    """``count`` values drawn together from sequence ``sequence_id``, numbers ``first`` on,
    formatted as they are iterated (an import's hundred thousand ids are held as five
    fields, not as a list of strings)."""

    sequence_id: str
    prefix: str
    min_digits: int
    first: int
    count: int

    def __iter__(self) -> Iterator[str]:
        for number in range(self.first, self.first + self.count):
            yield format_value(self.prefix, number, self.min_digits)


def _draw(session: Session, sequence_id: str, count: int) -> Drawn:
    """The increment itself: a single ``UPDATE … RETURNING`` in ``session``'s transaction."""
    row = session.execute(
        update(Sequence).where(Sequence.id == sequence_id)
        .values(next_value=Sequence.next_value + count)
        .returning(Sequence.prefix, Sequence.next_value, Sequence.min_digits)
        .execution_options(synchronize_session=False)).first()
    if row is None:
        raise InvalidInput(f"Unknown sequence {sequence_id!r}.", code="unknown_sequence")
    prefix, after, min_digits = row
    return Drawn(sequence_id, prefix, min_digits, after - count, count)


def next_ids(sequence_id: str, count: int = 1) -> list[str]:
    """Draw the next ``count`` values of a sequence, formatted; 400 for an unknown sequence.

    The increment is a single ``UPDATE … RETURNING`` in the caller's transaction: the row
    lock (PostgreSQL) or the write lock (SQLite) makes concurrent callers queue, so no value
    is handed out twice. On PostgreSQL the row stays locked until the caller's transaction
    ends: every other draw from the sequence waits for it (see :func:`draw_apart`).
    """
    return list(_draw(db.session(), sequence_id, count))


def draw_apart(sequence_id: str, count: int) -> Drawn:
    """Draw the next ``count`` values of a sequence in a write unit of its own
    (:func:`labapp.db.side_unit`), committed at once: the sequence's row is locked for the
    draw only, not for the length of the caller's work, so others draw from it meanwhile.
    Values the caller then does not use (its work failed) are a gap, never handed out again
    (docs/decisions/import-ids-drawn-apart.md). 400 for an unknown sequence.

    Call it outside any write unit: on SQLite a side unit waits for the write lock, which
    the session's own write unit would hold until the side unit gave up.
    """
    with side_unit() as session:
        return _draw(session, sequence_id, count)


def next_id(sequence_id: str) -> str:
    """Draw the next value of a sequence, formatted (see :func:`next_ids`)."""
    return next_ids(sequence_id)[0]
