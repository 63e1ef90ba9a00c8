"""Evaluation of the alert rules (issue 23): an item alerts when it starts to match, not
while it still matches, again after it stopped and matches anew; each recipient hears only
of items they may read; digests collect until they are due."""
from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask import Flask

from labapp.alerts.service import next_digest
from tests.alerts.conftest import (
    ADMIN_OWNER,
    NOW,
    alerts_of,
    digest_due,
    made,
    rule_body,
    said,
    set_amount,
    states_of,
    tick,
)
from tests.conftest import ApiClient
from tests.entities.conftest import body_of


def test_start_still_stop_and_again(app: Flask, lab: dict[str, Any]) -> None:
    rule = made(lab["alice"], rule_body("Running low"))
    first = tick(app)
    # Bob's low sample matches too (rules see every item); alice is told of hers only.
    assert first.started == 2 and first.notifications == 1
    assert alerts_of(app, "alice") == [said("Running low: 1 sample")]
    assert states_of(app, rule["id"]) == {lab["low"], lab["bobs"]}

    again = tick(app, NOW + timedelta(minutes=1))
    assert (again.started, again.notifications) == (0, 0), "still matching: no second alert"
    assert len(alerts_of(app, "alice")) == 1

    set_amount(lab["alice"], lab["low"], 20.0)
    stopped = tick(app, NOW + timedelta(minutes=2))
    assert stopped.stopped == 1 and stopped.notifications == 0
    assert states_of(app, rule["id"]) == {lab["bobs"]}, "stopped matching: the state is gone"

    set_amount(lab["alice"], lab["low"], 3.0)
    set_amount(lab["alice"], lab["full"], 4.0)
    back = tick(app, NOW + timedelta(minutes=3))
    assert back.started == 2
    assert alerts_of(app, "alice")[-1] == said("Running low: 2 samples"), "one line per rule"
    assert len(alerts_of(app, "alice")) == 2


def test_each_recipient_hears_only_of_what_they_may_read(app: Flask, lab: dict[str, Any],
                                                         admin: ApiClient) -> None:
    made(admin, rule_body("Low anywhere", users=["alice", "bob"]))
    tick(app)
    assert alerts_of(app, "alice") == [said("Low anywhere: 1 sample", ADMIN_OWNER)]
    assert alerts_of(app, "bob") == [said("Low anywhere: 1 sample", ADMIN_OWNER)]
    # Each was told of their own department's sample: the admin, who reads both, of two.
    made(admin, rule_body("Low for admin", users=["admin"]))
    tick(app, NOW + timedelta(minutes=1))
    assert alerts_of(app, "admin") == [said("Low for admin: 2 samples", ADMIN_OWNER)]


def test_a_recipient_who_may_read_nothing_is_not_told(app: Flask, lab: dict[str, Any],
                                                      member: Any, admin: ApiClient) -> None:
    member("carol", department_id=lab["chemistry"])
    made(admin, rule_body("Physics only", filter=f"departmentID eq '{lab['physics']}'",
                                 users=["carol"]))
    report = tick(app)
    assert report.started == 2 and report.notifications == 0
    assert alerts_of(app, "carol") == []  # carol reads Chemistry only


def test_recipients_by_department_and_role(app: Flask, lab: dict[str, Any],
                                           member: Any, admin: ApiClient) -> None:
    member("dora", department_id=lab["physics"], roles=["DATA_MANAGER"])
    made(lab["alice"], rule_body("By department", users=[], departments=[lab["physics"]]))
    made(admin, rule_body("By role", users=[], roles=["DATA_MANAGER"]))  # roles need ADMIN
    tick(app)
    assert alerts_of(app, "alice") == [said("By department: 1 sample")]
    assert sorted(alerts_of(app, "dora")) == [said("By department: 1 sample"),
                                              said("By role: 1 sample", ADMIN_OWNER)]


def test_a_rule_switched_off_is_not_evaluated_and_tells_afresh_when_on(
        app: Flask, lab: dict[str, Any]) -> None:
    rule = made(lab["alice"], rule_body())
    tick(app)
    body = {**rule_body(), "active": False}
    assert lab["alice"].put(f"/api/alert-rule/{rule['id']}", json=body).status_code == 200
    off = tick(app, NOW + timedelta(minutes=1))
    assert off.rules == 0 and states_of(app, rule["id"]) == set()
    assert lab["alice"].put(f"/api/alert-rule/{rule['id']}", json=rule_body()).status_code == 200
    tick(app, NOW + timedelta(minutes=2))
    assert alerts_of(app, "alice") == [said("Running low: 1 sample")] * 2


def test_relative_dates_are_read_at_the_tick(app: Flask, lab: dict[str, Any]) -> None:
    body_of(lab["alice"].post("/api/entity", json={"entities": [
        {"eClass": "Sample", "id": lab["full"], "expiryDate": "2026-12-20"}]}), 200)
    made(lab["alice"], rule_body("Expire within 14 days",
                                 filter="expiryDate lt now() add duration'P14D'"))
    assert tick(app).started == 0, "20 December is not within 14 days of 25 November"
    later = tick(app, NOW + timedelta(days=12))
    assert later.started == 1
    assert alerts_of(app, "alice") == [said("Expire within 14 days: 1 sample")]


def test_daily_digest_collects_until_due(app: Flask, lab: dict[str, Any]) -> None:
    rule = made(lab["alice"], rule_body("Daily low", cadence="daily"))
    first = tick(app)
    assert first.started == 2 and first.notifications == 0, "waits for the digest"
    due = digest_due(app, rule["id"])
    assert due > NOW and due == next_digest("daily", due - timedelta(days=1))
    set_amount(lab["alice"], lab["full"], 1.0)
    tick(app, due - timedelta(minutes=1))
    assert alerts_of(app, "alice") == []
    sent = tick(app, due)
    assert sent.digests == 1 and sent.notifications == 1
    assert alerts_of(app, "alice") == [said("Daily digest · Daily low: 2 samples")]
    assert tick(app, due + timedelta(minutes=1)).digests == 0, "one digest per day"
    nothing_new = tick(app, due + timedelta(days=1))
    assert nothing_new.digests == 1 and nothing_new.notifications == 0


def test_a_broken_rule_is_reported_and_skipped(app: Flask, lab: dict[str, Any]) -> None:
    from labapp.db import db, transaction
    from labapp.model import AlertRule

    rule = made(lab["alice"], rule_body())
    with app.app_context(), transaction():
        db.session.get(AlertRule, rule["id"]).filter = "noSuchField eq 1"
    report = tick(app)
    assert list(report.broken) == [rule["id"]] and report.started == 0
    assert any("skipped" in line for line in report.lines())


def test_next_digest_times() -> None:
    assert next_digest("immediate", NOW) is None
    daily = next_digest("daily", NOW)
    weekly = next_digest("weekly", NOW)
    assert daily is not None and daily.hour == 6 and daily - NOW < timedelta(days=1)
    assert weekly is not None and weekly.weekday() == 0 and weekly > NOW


def test_cli_runs_one_tick(app: Flask, lab: dict[str, Any]) -> None:
    made(lab["alice"], rule_body())
    result = app.test_cli_runner().invoke(args=["alerts", "run"])
    assert result.exit_code == 0, result.output
    assert "2 started matching" in result.output and "1 notifications" in result.output
    assert "e-mail: 0 sent, 0 failed" in result.output


def test_rules_of_one_class_share_a_scan_and_keep_their_own_items(
        app: Flask, lab: dict[str, Any]) -> None:
    low = made(lab["alice"], rule_body("Low"))
    full = made(lab["alice"], rule_body("Full", filter="amount ge 40"))
    bobs = made(lab["alice"], rule_body("Bob's", filter="startswith(name,'Bob')"))
    every = made(lab["alice"], rule_body("Every sample", filter=None))
    assert tick(app).rules == 4
    assert states_of(app, low["id"]) == {lab["low"], lab["bobs"]}
    assert states_of(app, full["id"]) == {lab["full"]}
    assert states_of(app, bobs["id"]) == {lab["bobs"]}
    assert states_of(app, every["id"]) == {lab["low"], lab["full"], lab["bobs"]}
    assert sorted(alerts_of(app, "alice")) == [
        said("Every sample: 2 samples"), said("Full: 1 sample"), said("Low: 1 sample")]
