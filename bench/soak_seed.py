"""The database of a standalone soak (``python -m bench.soak``): Samples seeded through Core,
indexed, their tallies folded and the planner's statistics gathered (as a server that has
been running would have them), a 10 × 10 box holding 50 of them, the reader's dashboard of
eight widgets, and a PAT each for the reader and the administrator."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from bench.dashboards import WIDGETS
from bench.harness import READER, Bench, open_bench
from bench.server import basic
from bench.serving import forget_search_backlog
from bench.soak import SoakTargets
from bench.write import core_seed
from labapp import sqlite_stats
from labapp.access.actor import Actor
from labapp.auth import pats
from labapp.dashboards import tally_folding
from labapp.db import db, transaction
from labapp.search.rebuild import rebuild_index

IN_BOX = 50


def _created(response, what: str) -> dict:
    if response.status_code not in (200, 201):
        raise RuntimeError(f"{what}: {response.status_code} {response.get_data()[:300]!r}")
    return response.get_json()


def _as_served(bench: Bench, log: Callable[[str], None]) -> None:
    """What the worker of a server that has been running would have done already."""
    with bench.app.app_context():
        try:
            log(f"  [{bench.backend}] indexed {rebuild_index():,} entities")
            while tally_folding.upkeep():
                pass
            sqlite_stats.refresh()
            db.session.commit()
        finally:
            db.session.remove()
    forget_search_backlog(bench)
    if bench.backend == "postgresql":  # what autovacuum does soon after a bulk load
        with bench.engine.connect() as connection:
            connection.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql(
                "ANALYZE")


def _pat(bench: Bench, username: str) -> dict[str, str]:
    with bench.app.app_context():
        try:
            with transaction():
                value = pats.create(Actor(user_id=username), "soak", None).value
        finally:
            db.session.remove()
    return basic(username, value)


@contextmanager
def seeded(backend: str, entities: int,
           log: Callable[[str], None] = print) -> Iterator[tuple[dict[str, str], SoakTargets]]:
    """A fresh database of ``entities`` Samples: the server's environment and the targets."""
    with open_bench(backend) as bench:
        core_seed(bench, entities, log=log)
        _as_served(bench, log)
        client = bench.client
        (box,) = _created(client.post("/api/storage/location", headers=bench.admin_headers,
                                      json=[{"name": "Soak box", "locationType": "Box",
                                             "rows": 10, "columns": 10,
                                             "departmentID": bench.department}]), "box")
        _created(client.post(f"/api/storage/location/{box['id']}/checkin",
                             headers=bench.admin_headers,
                             json=[{"eClass": "Sample", "id": f"SAMX{n:06d}"}
                                   for n in range(IN_BOX)]), "check-in")
        board = _created(client.post("/api/dashboard", headers=bench.reader_headers,
                                      json={"name": "Soak", "widgets": WIDGETS}), "dashboard")
        settings = bench.app.config["LABAPP"]
        environment = {"LABAPP_DATABASE_URL": settings["DATABASE_URL"],
                       "LABAPP_INSTANCE_PATH": settings["INSTANCE_PATH"],
                       "LABAPP_SECRET_KEY": settings["SECRET_KEY"]}
        targets = SoakTargets(
            reader=_pat(bench, READER), writer=_pat(bench, "admin"),
            department=bench.department,
            sample_ids=tuple(f"SAMX{n:06d}" for n in range(entities)), box=box["id"],
            dashboard=board["id"], widgets=len(WIDGETS))
        with bench.app.app_context():
            db.engine.dispose()  # the server's processes hold the connections from here
        yield environment, targets
