"""Rows the query tests filter, sort and page: five samples, two experiments, two users.

| id  | name         | status     | type   | description  | unit | amount | dateTaken  |
|-----|--------------|------------|--------|--------------|------|--------|------------|
| TQ1 | Alpha        | Initial    | Blood  | first sample | ml   | 1.5    | 2026-01-31 |
| TQ2 | beta         | InProgress | Tissue | x/y          |      | 0      | 2026-02-15 |
| TQ3 | O'Brien 100% | Completed  | Tissue | ''           | l    | -2.25  |            |
| TQ4 | Gamma_1      | Discarded  | Blood  | back\\slash  |      |        |            |
| TQ5 | gamma%1      | Initial    | Other  |              | ML   | 10     | 2026-01-01 |

createdUtc / createdBy: TQ1 2026-01-31T10:00:00Z alice, TQ2 2026-02-15T08:30:00.250Z bob,
TQ3 2026-03-01T00:00:00Z alice, TQ4 2025-12-31T23:30:00Z admin, TQ5 2026-01-15T12:00:00Z bob.

Attributes: TQ1 {ph: 7.2, batch: "A1", count: 10, flag: true, note: "50% off"},
TQ2 {ph: "seven", batch: "B2", count: 3, flag: false}, TQ3 {ph: 6, note: "a_b", count: null},
TQ4 {}, TQ5 {batch: "10", flag: "maybe"}.
"""
from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import func, select

from labapp.db import db
from labapp.entities.audit import stamp_created
from labapp.model import Entity, Experiment, Sample, User
from labapp.model.registry import find_class
from labapp.query.filter import compile_filter, entity_fields

# Fixtures the query tests share with the entity tests, and the lab of the dataset tests.
from tests.entities.conftest import admin, department, grant, member, project  # noqa: F401
from tests.query.lab import bob, lab  # noqa: F401

ALL = {"TQ1", "TQ2", "TQ3", "TQ4", "TQ5"}
SAMPLES: tuple[dict[str, Any], ...] = (
    dict(id="TQ1", name="Alpha", status="Initial", type="Blood", description="first sample",
         unit="ml", amount=1.5, date_taken=date(2026, 1, 31),
         created_utc=datetime(2026, 1, 31, 10, 0, tzinfo=UTC), created_by="alice",
         attributes={"ph": 7.2, "batch": "A1", "count": 10, "flag": True, "note": "50% off"}),
    dict(id="TQ2", name="beta", status="InProgress", type="Tissue", description="x/y",
         unit=None, amount=0.0, date_taken=date(2026, 2, 15),
         created_utc=datetime(2026, 2, 15, 8, 30, 0, 250000, tzinfo=UTC), created_by="bob",
         attributes={"ph": "seven", "batch": "B2", "count": 3, "flag": False}),
    dict(id="TQ3", name="O'Brien 100%", status="Completed", type="Tissue", description="",
         unit="l", amount=-2.25, date_taken=None,
         created_utc=datetime(2026, 3, 1, tzinfo=UTC), created_by="alice",
         attributes={"ph": 6, "note": "a_b", "count": None}),
    dict(id="TQ4", name="Gamma_1", status="Discarded", type="Blood", description="back\\slash",
         unit=None, amount=None, date_taken=None,
         created_utc=datetime(2025, 12, 31, 23, 30, tzinfo=UTC), created_by="admin",
         attributes={}),
    dict(id="TQ5", name="gamma%1", status="Initial", type="Other", description=None,
         unit="ML", amount=10.0, date_taken=date(2026, 1, 1),
         created_utc=datetime(2026, 1, 15, 12, 0, tzinfo=UTC), created_by="bob",
         attributes={"batch": "10", "flag": "maybe"}),
)


def _add(model: type[Entity], created_by: str = "admin",
         created_utc: datetime | None = None, **values: Any) -> None:
    entity = model(**values)
    stamp_created(entity, "admin")
    entity.created_by = created_by
    if created_utc is not None:
        entity.created_utc = created_utc
    db.session.add(entity)


@pytest.fixture
def rows(app: Flask) -> Iterator[None]:
    """The rows above, flushed into the test's rolled-back transaction; an app context."""
    with app.app_context():
        for sample in SAMPLES:
            _add(Sample, **sample)
        for number, start in ((1, date(2026, 1, 10)), (2, None)):
            _add(Experiment, id=f"TQE{number}", name=f"Experiment {number}", status="Initial",
                 type="Other", attributes={}, start_date=start)
        for number, active in ((1, True), (2, False)):
            _add(User, id=f"tq-user{number}", name=f"User {number}", status="Active",
                 type="Other", attributes={}, is_active=active)
        db.session.flush()
        yield


def matching(text: str | None, model: type[Entity] = Sample,
             user_id: str | None = "alice") -> set[str]:
    """Ids of this module's rows of ``model`` that filter ``text`` selects."""
    condition = compile_filter(text, entity_fields(find_class(model.__name__)),
                               user_id=user_id)
    query = select(model.id).where(condition, func.lower(model.id).startswith("tq"))
    return set(db.session.scalars(query))
