"""A tick writes in short units (issue 33 §3): states are claimed and items told a chunk per
transaction, so a tick stopped between two units leaves the rest to the next tick, which
tells each item still untold once; nobody is told of an item twice."""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import func, select, update

from labapp.access.grant_sets import actor_for
from labapp.alerts import evaluate as tick
from labapp.alerts import service as rules
from labapp.alerts import telling
from labapp.db import after_commit, db, transaction
from labapp.entities.service import save_batch
from labapp.model import AlertState, Notification, User
from tests.alerts.conftest import rule_body

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
SAMPLES = 10


class Stopped(Exception):
    """The tick's process stopped here."""


@pytest.fixture
def lab(fresh_app: Callable[..., Flask], monkeypatch: pytest.MonkeyPatch) -> Iterator[Flask]:
    """Ten low samples and one immediate rule telling the admin; chunks of 3 states and 4
    told items, and every item a committed unit told recorded in ``app.extensions["told"]``."""
    monkeypatch.setattr(tick, "CHUNK", 3)
    monkeypatch.setattr(tick, "TELL_CHUNK", 4)
    app = fresh_app(initialised=True)
    with app.app_context(), transaction():
        admin = actor_for(db.session.get(User, "admin"), method=None)
        save_batch(admin, [{"eClass": "Sample", "name": f"Tube {number}", "amount": 1.0}
                           for number in range(SAMPLES)])
        rules.create(admin, {**rule_body("Low", users=["admin"]), "filter": "amount le 5"})
    told: list[str] = []
    app.extensions["told"] = told
    tell = telling.Teller.tell

    def recording(self: telling.Teller, now: datetime, read: Any = None) -> None:
        telling = [item.id for parts in self.parts.values() for _, _, items in parts
                   for item in items]
        tell(self, now, read)
        after_commit(lambda: told.extend(dict.fromkeys(telling)))

    monkeypatch.setattr(telling.Teller, "tell", recording)
    with app.app_context():
        yield app
        db.session.remove()


def _states() -> tuple[int, int]:
    """(states, states told)."""
    try:
        return (db.session.scalar(select(func.count()).select_from(AlertState)) or 0,
                db.session.scalar(select(func.count()).select_from(AlertState)
                                  .where(AlertState.alerted_utc.is_not(None))) or 0)
    finally:
        db.session.rollback()


def _bells() -> int:
    try:
        return db.session.scalar(select(func.count()).select_from(Notification)
                                 .where(Notification.kind == "Alert")) or 0
    finally:
        db.session.rollback()


def _told_once(app: Flask) -> None:
    told = app.extensions["told"]
    assert len(told) == len(set(told)) == SAMPLES, "each item told once"


def test_a_tick_tells_every_item_once_a_chunk_at_a_time(lab: Flask) -> None:
    report = tick.evaluate(NOW)
    assert (report.started, report.notifications) == (SAMPLES, 3)  # 4 + 4 + 2 items
    assert _states() == (SAMPLES, SAMPLES) and _bells() == 3
    _told_once(lab)
    again = tick.evaluate(NOW)
    assert (again.started, again.notifications) == (0, 0) and _bells() == 3


def test_each_rule_is_told_whole_in_one_message_per_tick(
        lab: Flask, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two rules of ten items each with units of twelve: the first unit tells the first rule
    alone rather than two items of the second, which would have told the second's ten in two
    messages of one tick (the visibility matrix saw "told twice" so)."""
    monkeypatch.setattr(tick, "TELL_CHUNK", 12)
    with transaction():
        admin = actor_for(db.session.get(User, "admin"), method=None)
        rules.create(admin, {**rule_body("Also low", users=["admin"]), "filter": "amount le 5"})
    report = tick.evaluate(NOW)
    assert (report.started, report.notifications) == (2 * SAMPLES, 2)
    messages = db.session.scalars(select(Notification.message)
                                  .where(Notification.kind == "Alert")).all()
    db.session.rollback()
    assert sorted(messages) == sorted(f"{name}: 10 samples · rule of Administrator (admin)"
                                      for name in ("Low", "Also low"))


def test_a_tick_stopped_between_tellings_leaves_the_rest_to_the_next(
        lab: Flask, monkeypatch: pytest.MonkeyPatch) -> None:
    tell = telling.Teller.tell
    units = [0]

    def stopping(self: telling.Teller, now: datetime, read: Any = None) -> None:
        units[0] += 1
        if units[0] == 2:
            raise Stopped
        tell(self, now, read)

    monkeypatch.setattr(telling.Teller, "tell", stopping)
    with pytest.raises(Stopped):
        tick.evaluate(NOW)
    assert _states() == (SAMPLES, 4) and _bells() == 1, "the first unit stands, alone"
    monkeypatch.setattr(telling.Teller, "tell", tell)
    report = tick.evaluate(NOW)
    assert (report.started, report.notifications) == (0, 2)
    assert _states() == (SAMPLES, SAMPLES) and _bells() == 3
    _told_once(lab)


def test_a_tick_stopped_between_claims_leaves_the_rest_to_the_next(
        lab: Flask, monkeypatch: pytest.MonkeyPatch) -> None:
    claim = tick._claim
    units = [0]

    def stopping(rule_id: str, entity_ids: Sequence[str], now: datetime) -> set[str]:
        units[0] += 1
        if units[0] == 2:
            raise Stopped
        return claim(rule_id, entity_ids, now)

    monkeypatch.setattr(tick, "_claim", stopping)
    with pytest.raises(Stopped):
        tick.evaluate(NOW)
    assert _states() == (3, 0) and _bells() == 0, "claimed, nobody told yet"
    monkeypatch.setattr(tick, "_claim", claim)
    report = tick.evaluate(NOW)
    assert (report.started, report.notifications) == (SAMPLES - 3, 3)
    assert _states() == (SAMPLES, SAMPLES) and _bells() == 3
    _told_once(lab)


def test_a_unit_is_sized_from_the_pace_of_the_last() -> None:
    size = tick._UnitSize(500)
    assert size.items == tick.MIN_UNIT_ITEMS, "the first unit, of unknown pace, is small"
    size.follow(size.items, tick.UNIT_SECONDS / 100)
    assert size.items == 2 * tick.MIN_UNIT_ITEMS, "a fast unit: at most twice as many"
    for _ in range(10):
        size.follow(size.items, tick.UNIT_SECONDS / 100)
    assert size.items == 500, "never above the chunk"
    size.follow(500, tick.UNIT_SECONDS * 4)
    assert size.items == 125, "four times too slow: a quarter of the items"
    size.follow(125, tick.UNIT_SECONDS * 100)
    assert size.items == tick.MIN_UNIT_ITEMS, "never below the floor"
    small = tick._UnitSize(4)
    assert small.items == 4, "a chunk below the floor is taken whole"
    small.follow(4, tick.UNIT_SECONDS * 10)
    assert small.items == 4, "a chunk below the floor stays whole"


def test_units_follow_their_size_as_it_changes() -> None:
    size = tick._UnitSize(4)
    sliced = []
    for chunk in size.slices([str(number) for number in range(10)]):
        sliced.append(chunk)
        size.items = 3
    assert sliced == [["0", "1", "2", "3"], ["4", "5", "6"], ["7", "8", "9"]]


def test_states_another_worker_takes_after_the_plan_are_left_to_it(
        lab: Flask, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = tick._plan
    taken_elsewhere: list[str] = []

    def raced(*args: Any, **kwargs: Any) -> Any:
        planned = plan(*args, **kwargs)
        for rule_id, ids in planned.taking.items():
            first = sorted(ids)[0]
            with transaction():  # another worker marks it told between the plan and the unit
                db.session.execute(update(AlertState).where(
                    AlertState.rule_id == rule_id, AlertState.entity_id == first)
                    .values(alerted_utc=NOW))
            taken_elsewhere.append(first)
        return planned

    monkeypatch.setattr(tick, "_plan", raced)
    report = tick.evaluate(NOW)
    told = lab.extensions["told"]
    assert len(taken_elsewhere) == 3 and not set(told) & set(taken_elsewhere)
    assert len(told) == len(set(told)) == SAMPLES - 3, "the unit told what it marked, once"
    assert report.notifications == 3 and _states() == (SAMPLES, SAMPLES)
