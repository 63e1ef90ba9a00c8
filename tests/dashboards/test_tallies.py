"""The entity tallies behind the counting widgets: the triggers follow every write (API,
ORM and Core alike), a fold keeps the sums, and the widgets read the same numbers before
and after it."""
from __future__ import annotations

from collections.abc import Callable

from flask import Flask
from sqlalchemy import delete, func, select, update

from labapp.dashboards import tally_folding
from labapp.db import db, transaction
from labapp.model import Entity, EntityCount, EntityCountChange
from tests.conftest import ApiClient
from tests.dashboards.conftest import board, created, widget
from tests.entities.conftest import save
from tests.helpers.dashboards import tallied, true_counts, widget_data


def changes(app: Flask) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(EntityCountChange))


def fold(app: Flask) -> int:
    with app.app_context():
        return tally_folding.fold()


def test_the_tallies_follow_every_kind_of_write(app: Flask, admin: ApiClient,
                                                department: Callable[..., str],
                                                project: Callable[..., str]) -> None:
    chemistry, assay = department("Chemistry"), project("Assay")
    made = save(admin, {"eClass": "Sample", "name": "a", "departmentID": chemistry},
                {"eClass": "Sample", "name": "b", "projectID": assay},
                {"eClass": "Sample", "name": "c"}, {"eClass": "Request", "name": "r"})
    assert tallied(app) == true_counts(app)
    first, second = made[0]["id"], made[1]["id"]
    save(admin, {"eClass": "Sample", "id": first, "status": "InProgress"}, status=200)
    save(admin, {"eClass": "Sample", "id": second, "departmentID": chemistry,
                 "projectID": None}, status=200)
    assert tallied(app) == true_counts(app)
    with app.app_context(), transaction() as session:
        session.execute(update(Entity).where(Entity.eclass == "Sample")
                        .values(status="Completed"))
        session.execute(delete(Entity).where(Entity.id == made[2]["id"]))
    assert tallied(app) == true_counts(app)

    assert fold(app) > 0
    assert changes(app) == 0
    assert tallied(app) == true_counts(app)
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(EntityCount)
                                 .where(EntityCount.n <= 0)) == 0
    assert fold(app) == 0


def test_an_update_that_keeps_every_key_appends_nothing(app: Flask, admin: ApiClient) -> None:
    (sample,) = save(admin, {"eClass": "Sample", "name": "before"})
    fold(app)
    save(admin, {"eClass": "Sample", "id": sample["id"], "name": "after",
                 "description": "renamed"}, status=200)
    assert changes(app) == 0


def test_the_counting_widgets_agree_before_and_after_a_fold(
        app: Flask, admin: ApiClient, member: Callable[..., ApiClient],
        department: Callable[..., str]) -> None:
    physics, chemistry = department("Physics"), department("Chemistry")
    alice = member("alice", department_id=physics)
    save(admin, *({"eClass": "Sample", "name": f"P{i}", "departmentID": physics}
                  for i in range(3)), {"eClass": "Sample", "name": "C", "departmentID": chemistry})
    (moved,) = save(admin, {"eClass": "Sample", "name": "moved", "departmentID": physics})
    save(admin, {"eClass": "Sample", "id": moved["id"], "departmentID": chemistry,
                 "status": "InProgress"}, status=200)
    stored = created(alice, board("Counts", [
        widget("status-counts", {"eClass": "Sample"}),
        widget("created-per-week", {"eClass": "Sample", "weeks": 2})]))
    before = widget_data(alice, stored, 0), widget_data(alice, stored, 1)
    assert fold(app) > 0
    assert (widget_data(alice, stored, 0), widget_data(alice, stored, 1)) == before
    bars = {bar["label"]: bar["value"] for bar in before[0]["bars"]}
    assert (bars["Initial"], bars["InProgress"]) == (3, 0)
    assert [point["value"] for point in before[1]["points"]] == [0, 3]
