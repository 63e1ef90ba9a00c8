"""Saved column mappings: one per user, class and source name, offered on the next import.

The source name of a file is its name without the extension and without the dates, counters
and copy marks that change from one export to the next (``plate_map_2026-11-25 (3).csv`` →
``plate map``), so next week's file finds this week's mapping. A mapping is saved under a
name the user gives (the wizard proposes the source name) and is private to its owner.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import PurePath

from sqlalchemy import select

from labapp.access.actor import Actor
from labapp.db import db
from labapp.errors import InvalidInput
from labapp.model import SavedMapping
from labapp.model.registry import ClassSpec
from labapp.model.types import utc_now

MAX_NAME = 255
_NOISE = re.compile(r"\(\d+\)|\d{4}[-_.]?\d{2}[-_.]?\d{2}(?:[T_ -]?\d{2}[-_.:]?\d{2}"
                    r"(?:[-_.:]?\d{2})?)?|\d+")
_SEPARATORS = re.compile(r"[\s_.\-]+")


def source_name(filename: str) -> str:
    """The name a file's mapping is saved and found under (see the module docstring)."""
    stem = PurePath(filename.replace("\\", "/")).stem
    cleaned = _SEPARATORS.sub(" ", _NOISE.sub(" ", stem)).strip()
    return (cleaned or stem.strip() or "import").lower()[:MAX_NAME]


def find(actor: Actor, spec: ClassSpec, name: str) -> SavedMapping | None:
    """The actor's saved mapping of ``spec`` called ``name`` (case-insensitive), or None."""
    wanted = name.strip().lower()
    return db.session.scalars(select(SavedMapping).where(
        SavedMapping.owner_id == actor.author_id, SavedMapping.eclass == spec.name,
        SavedMapping.source == wanted)).first()


def named(actor: Actor, spec: ClassSpec, name: str) -> dict[str, str]:
    """The mapping saved as ``name``; InvalidInput ``invalid_mapping`` when there is none."""
    saved = find(actor, spec, name)
    if saved is None:
        raise InvalidInput(f"You have no saved {spec.name} mapping called {name!r}.",
                           code="invalid_mapping",
                           errors=[{"field": "mapping", "message": "no such saved mapping"}])
    return dict(saved.mapping)


def names(actor: Actor, spec: ClassSpec) -> list[str]:
    """The names of the actor's saved mappings of ``spec``, in order."""
    return list(db.session.scalars(select(SavedMapping.source).where(
        SavedMapping.owner_id == actor.author_id, SavedMapping.eclass == spec.name)
        .order_by(SavedMapping.source)))


def offered(actor: Actor, spec: ClassSpec, filename: str,
            headers: Sequence[str]) -> dict[str, str] | None:
    """The saved mapping for this file's source name, limited to the columns it has; None
    when there is none."""
    saved = find(actor, spec, source_name(filename))
    if saved is None:
        return None
    present = set(headers)
    return {column: field for column, field in saved.mapping.items() if column in present}


def save(actor: Actor, spec: ClassSpec, name: str, mapping: Mapping[str, str]) -> SavedMapping:
    """Save (or replace) the actor's mapping of ``spec`` called ``name``; runs in the
    caller's transaction. InvalidInput for a blank or too long name."""
    wanted = name.strip().lower()
    if not wanted or len(wanted) > MAX_NAME:
        raise InvalidInput(f"A mapping's name has 1 to {MAX_NAME} characters.",
                           code="validation_failed",
                           errors=[{"field": "saveAs", "message": "1 to 255 characters"}])
    saved = find(actor, spec, wanted)
    if saved is None:
        saved = SavedMapping(owner_id=actor.author_id, eclass=spec.name, source=wanted)
        db.session.add(saved)
    saved.mapping = dict(mapping)
    saved.modified_utc = utc_now()
    db.session.flush()
    return saved
