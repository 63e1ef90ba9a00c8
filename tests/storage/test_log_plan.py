"""The log of a location is read through its indexes when most entries are check-ins.

At a million samples a box page read the whole ``storage_log`` twice (120 ms each): every
check-in leaves ``from_location_id`` NULL, SQLite's statistics counted those NULLs as one
value, and the planner expected ``from_location_id = ?`` to match them all
(bench/runs/2026-11-25-million.md, issue 24). Migration ``a1c4e7f9b2d6`` makes that index
hold the moves only.
"""
from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import event, insert, text

from labapp.access.grant_sets import actor_for
from labapp.db import db
from labapp.model import StorageLogEntry, User
from labapp.storage import log
from tests.conftest import BACKEND, ApiClient
from tests.storage.conftest import make_items, make_locations

CHECK_INS = 400
BOXES = 40


@pytest.mark.skipif(BACKEND != "sqlite", reason="SQLite's statistics; PostgreSQL keeps a "
                                                "null fraction per column")
def test_a_box_log_uses_the_indexes_after_analyze(
        app: Flask, admin: ApiClient, make_user: Callable[..., str]) -> None:
    make_user("logplan-reader")
    boxes = make_locations(admin, *({"name": f"Plan box {number}", "locationType": "Box"}
                                    for number in range(BOXES)))
    box = boxes[0]
    items = make_items(admin, "Sample", CHECK_INS // 2)
    now = datetime.now(UTC)
    sent: list[tuple[str, Any]] = []
    with app.app_context():
        db.session.execute(insert(StorageLogEntry), [
            {"action": log.CHECKIN, "eclass": "Sample", "entity_id": items[number // 2],
             "position": None,
             "location_id": boxes[number % BOXES]["id"],
             "from_location_id": None, "user_id": "admin", "timestamp_utc": now}
            for number in range(CHECK_INS)])
        db.session.commit()
        db.session.execute(text("ANALYZE"))
        db.session.commit()
        actor = actor_for(db.session.get(User, "logplan-reader"), method="bearer")

        def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
            if "storage_log" in statement:
                sent.append((statement, parameters))
        event.listen(db.engine, "before_cursor_execute", record)
        try:
            page = log.page(actor, box["id"])
        finally:
            event.remove(db.engine, "before_cursor_execute", record)
        assert page.total == CHECK_INS // BOXES
        assert len(sent) == 2
        for statement, parameters in sent:
            plan = [row[3] for row in db.session.connection().exec_driver_sql(
                "EXPLAIN QUERY PLAN " + statement, parameters)]
            assert not any(line.startswith("SCAN storage_log") for line in plan), plan
            assert any("ix_storage_log_from_location_id_id" in line for line in plan), plan
