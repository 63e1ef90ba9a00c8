"""The events and the audit trail of a detail page speak words (issue 21 §2): where an item
was checked in or out by place name and slot, field labels, references by name, amounts with
their unit and no ``.0``."""
from __future__ import annotations

import re
from collections.abc import Callable
from html import unescape

from flask import Flask

from tests.conftest import ApiClient
from tests.entities.conftest import body_of, save
from tests.helpers.pages import page_login


def section(page: str, name: str) -> str:
    return page.split(f'id="{name}"', 1)[1].split("</section>", 1)[0]


def text_of(fragment: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def test_events_and_audit_trail_in_words(app: Flask, admin: ApiClient,
                                         member: Callable[..., ApiClient],
                                         department: Callable[..., str]) -> None:
    physics = department("Physics")
    alice = member("alice", department_id=physics)
    box = body_of(admin.post("/api/storage/location", json=[
        {"name": "Box 12", "departmentID": physics, "rows": 2, "columns": 3}]), 201)[0]["id"]
    experiment, sample = save(alice, {"eClass": "Experiment", "id": "#e", "name": "Growth"},
                              {"eClass": "Sample", "name": "Tube", "amount": 180.0,
                               "unit": "µL"})
    body_of(alice.post(f"/api/storage/location/{box}/checkin", json=[
        {"eClass": "Sample", "id": sample["id"], "position": "A1"}]), 200)
    current = body_of(alice.get(f"/api/entity/Sample/{sample['id']}"), 200)
    save(alice, {"eClass": "Sample", "id": sample["id"], "amount": 150.0,
                 "experimentID": experiment["id"], "version": current["version"]}, status=200)
    browser = app.test_client()
    assert page_login(browser, "alice").status_code == 303
    response = browser.get(f"/entities/Sample/{sample['id']}")
    assert response.status_code == 200
    page = response.get_data(as_text=True)
    events = text_of(section(page, "events"))
    assert f"Checked in to Box 12 · A1 {box}" in events and "CheckedIn" not in events
    audit = text_of(section(page, "audit"))
    assert "Amount 180 µL → 150 µL" in audit and "180.0" not in audit
    assert f"Experiment — → Growth {experiment['id']}" in audit
    assert "experimentID" not in audit
