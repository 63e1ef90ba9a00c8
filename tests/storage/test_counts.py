"""The counts of items per location the database keeps for the storage tree (issue 24): the
triggers follow every write that puts an item in or takes it out (API, ORM and Core alike),
a fold keeps the sums, and the tree reads the same numbers before and after it."""
from __future__ import annotations

from collections import Counter

import pytest
from flask import Flask
from sqlalchemy import delete, func, select, text, update

from labapp.db import db, transaction
from labapp.model import Entity, LocationCount, LocationCountChange, Plate, Sample
from labapp.storage import counts, tree
from tests.conftest import ApiClient
from tests.storage.conftest import body_of, check_in, make_items, make_locations, refs


def true_counts(app: Flask) -> Counter[str]:
    """Items per location, counted from the items: samples not on a plate, and plates."""
    with app.app_context():
        samples = db.session.execute(
            select(Sample.location_id, func.count()).where(Sample.location_id.is_not(None),
                                                           Sample.plate_id.is_(None))
            .group_by(Sample.location_id)).all()
        plates = db.session.execute(
            select(Plate.location_id, func.count()).where(Plate.location_id.is_not(None))
            .group_by(Plate.location_id)).all()
    found: Counter[str] = Counter()
    for location_id, n in (*samples, *plates):
        found[location_id] += n
    return found


def kept(app: Flask) -> Counter[str]:
    """What the kept counts say: folded counts plus pending changes, zeros left out."""
    sums: Counter[str] = Counter()
    with app.app_context():
        for table in (LocationCount, LocationCountChange):
            for location_id, n in db.session.execute(select(table.location_id, table.n)):
                sums[location_id] += n
    return Counter({location_id: n for location_id, n in sums.items() if n})


def pending(app: Flask) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(LocationCountChange))


def fold(app: Flask) -> int:
    with app.app_context():
        return counts.fold()


def test_the_counts_follow_every_kind_of_write(app: Flask, admin: ApiClient) -> None:
    box, other, shelf = (location["id"] for location in make_locations(
        admin, {"name": "Count box"}, {"name": "Other box"}, {"name": "Plate shelf"}))
    samples = make_items(admin, "Sample", 6)
    plate, = make_items(admin, "Plate", 1)
    check_in(admin, box, refs("Sample", samples[:4]))
    check_in(admin, shelf, refs("Plate", [plate]))
    assert kept(app) == true_counts(app) == Counter({box: 4, shelf: 1})

    check_in(admin, other, refs("Sample", samples[:1]))  # moved from one box to the other
    body_of(admin.post("/api/storage/location/checkout", json=refs("Sample", samples[1:2])),
            200)
    body_of(admin.post("/api/entity", json={"entities": [  # placed on the plate: it counts
        {"eClass": "Sample", "id": samples[2], "plateID": plate}]}), 200)  # as the plate
    body_of(admin.post("/api/entity", json={"entities": [  # the entity form's placement
        {"eClass": "Sample", "id": samples[4], "locationID": other}]}), 200)
    assert kept(app) == true_counts(app) == Counter({box: 1, other: 2, shelf: 1})

    with app.app_context(), transaction() as session:  # Core writes are counted alike
        session.execute(update(Sample).where(Sample.id.in_(samples[5:]))
                        .values(location_id=box))
        session.execute(update(Plate).where(Plate.id == plate).values(location_id=other))
        session.execute(update(Sample).where(Sample.id == samples[2]).values(plate_id=None))
        session.execute(delete(Sample).where(Sample.id == samples[3]))
        session.execute(delete(Entity).where(Entity.id == samples[3]))
    assert kept(app) == true_counts(app) == Counter({box: 2, other: 3})

    assert fold(app) > 0
    assert pending(app) == 0
    assert kept(app) == true_counts(app)
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(LocationCount)
                                 .where(LocationCount.n <= 0)) == 0
    assert fold(app) == 0


def test_the_tree_counts_the_same_before_and_after_a_fold(app: Flask,
                                                          admin: ApiClient) -> None:
    freezer, rack, box = (location["id"] for location in make_locations(
        admin, {"id": "#f", "name": "Fold freezer"},
        {"id": "#r", "name": "Fold rack", "parentID": "#f"},
        {"name": "Fold box", "parentID": "#r"}))
    check_in(admin, box, refs("Sample", make_items(admin, "Sample", 3)))
    check_in(admin, rack, refs("Sample", make_items(admin, "Sample", 1)))
    expected = {freezer: (0, 4), rack: (1, 4), box: (3, 3)}
    with app.app_context():
        assert tree.rollup([freezer, rack, box]) == expected
    fold(app)
    with app.app_context():
        assert tree.rollup([freezer, rack, box]) == expected
    check_in(admin, box, refs("Sample", make_items(admin, "Sample", 2)))  # a change pending
    with app.app_context():  # on top of a folded count
        assert tree.rollup([freezer, rack, box]) == {freezer: (0, 6), rack: (1, 6),
                                                     box: (5, 5)}


def test_the_tree_reads_plan_without_jit_or_parallel_workers(app: Flask,
                                                            admin: ApiClient) -> None:
    """PostgreSQL started two workers (~25 ms) to sum the counts of 10,000 boxes and compiled
    the walk (15 ms) for a statement of a few ms; the tree turns both off for its reads."""
    if app.config["SQLALCHEMY_DATABASE_URI"].startswith("sqlite"):
        pytest.skip("PostgreSQL's planner settings")
    box, = (location["id"] for location in make_locations(admin, {"name": "Planned box"}))
    with app.app_context():
        assert tree.rollup([box]) == {box: (0, 0)}
        settings = [db.session.scalar(text(f"SHOW {name}"))
                    for name in ("jit", "max_parallel_workers_per_gather")]
        db.session.rollback()
        assert settings == ["off", "0"]
        assert db.session.scalar(text("SHOW max_parallel_workers_per_gather")) != "0"


def test_the_worker_folds_the_counts(app: Flask, admin: ApiClient) -> None:
    from labapp import worker

    box, = (location["id"] for location in make_locations(admin, {"name": "Worker box"}))
    check_in(admin, box, refs("Sample", make_items(admin, "Sample", 2)))
    assert pending(app) > 0
    with app.app_context():
        job, = (job for lane in worker.lanes(app) for job in lane.jobs
                if job.name == "location counts")
        assert worker.run_once(job) is True
        assert worker.run_once(job) is False
    assert pending(app) == 0 and kept(app) == true_counts(app) == Counter({box: 2})
