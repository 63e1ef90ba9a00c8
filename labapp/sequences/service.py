"""Sequences: the default one per class, and atomic number generation."""
from __future__ import annotations

from sqlalchemy import select, update

from labapp.db import db
from labapp.errors import InvalidInput
from labapp.model import Sequence
from labapp.model.registry import classes

DEFAULT_MIN_DIGITS = 5


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


def next_ids(sequence_id: str, count: int = 1) -> list[str]:
    """Draw the next ``count`` values of a sequence, formatted; 400 for an unknown sequence.

    The increment is a single ``UPDATE … RETURNING``: the row lock (PostgreSQL) or the write
    lock (SQLite) makes concurrent callers queue, so no value is handed out twice.
    """
    row = db.session.execute(
        update(Sequence).where(Sequence.id == sequence_id)
        .values(next_value=Sequence.next_value + count)
        .returning(Sequence.prefix, Sequence.next_value, Sequence.min_digits)
        .execution_options(synchronize_session=False)).first()
    if row is None:
        raise InvalidInput(f"Unknown sequence {sequence_id!r}.", code="unknown_sequence")
    prefix, after, min_digits = row
    return [format_value(prefix, number, min_digits) for number in range(after - count, after)]


def next_id(sequence_id: str) -> str:
    """Draw the next value of a sequence, formatted (see :func:`next_ids`)."""
    return next_ids(sequence_id)[0]
