"""The one rule that marks values on lists, detail pages and widgets
(:mod:`labapp.reading.marks`): expired, overdue, empty and low, and the setting behind low."""
from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from flask import Flask

from labapp.config import ConfigError, load_settings
from labapp.model.registry import existing_class
from labapp.model.workflows import MATERIAL_WORKFLOW, REQUEST_WORKFLOW, WORKFLOW
from labapp.reading.marks import inputs, mark_of, unit_key, work_over

TODAY = date(2026, 3, 10)
LOW = {"µL": 10.0, "mg": 1.0}


@pytest.mark.parametrize(("workflow", "over"), [
    (REQUEST_WORKFLOW, {"Completed", "Rejected", "Canceled"}),
    (WORKFLOW, {"Completed", "Canceled"}),
    (MATERIAL_WORKFLOW, {"Completed", "Canceled", "Discarded"}),
])
def test_work_is_over_in_final_statuses_and_those_that_only_reopen(workflow, over) -> None:
    assert {status for status in workflow.statuses if work_over(workflow, status)} == over
    assert workflow.final_statuses <= over
    assert not work_over(workflow, None) and not work_over(workflow, "Nonsense")


def test_units_are_looked_up_ignoring_case_and_micro_spelling() -> None:
    assert {unit_key(unit) for unit in ("µL", "uL", "μL", " UL ", "µl")} == {"µl"}
    assert unit_key("units") == "units" and unit_key("mL") == "ml"


def test_marks_of_a_sample(app: Flask) -> None:
    with app.app_context():
        sample = existing_class("Sample")

        def mark(field: str, **row: object) -> str | None:
            return mark_of(sample, field, {"status": "InProgress", **row}, today=TODAY, low=LOW)

        assert mark("expiryDate", expiryDate=date(2026, 3, 9)) == "expired"
        assert mark("expiryDate", expiryDate="2026-03-09") == "expired"
        assert mark("expiryDate", expiryDate=TODAY) is None
        assert mark("expiryDate", expiryDate=date(2026, 3, 9), status="Discarded") is None
        assert mark("amount", amount=0.0, unit="µL") == "empty"
        assert mark("amount", amount=0, unit=None) == "empty"
        assert mark("amount", amount=9.99, unit="ul") == "low"
        assert mark("amount", amount=10.0, unit="µL") is None
        assert mark("amount", amount=0.5, unit="L") is None, "no threshold for litres"
        assert mark("amount", amount=0.5, unit=None) is None
        assert mark("amount", amount=50, unit="µL", attributes={"lowAmount": 60}) == "low"
        assert mark("amount", amount=5, unit="µL", attributes={"lowAmount": 1}) is None
        assert mark("amount", amount=5, unit="µL", attributes={"lowAmount": "x"}) == "low"
        assert mark("amount", amount=0, unit="µL", status="Canceled") is None
        assert mark("name", name="Tube") is None
        assert inputs(sample, ["name", "amount", "expiryDate"]) == [
            "status", "unit", "attributes"]
        assert inputs(sample, ["name"]) == []


def test_marks_of_a_request_and_of_a_step_input(app: Flask) -> None:
    with app.app_context():
        request, step_input = existing_class("Request"), existing_class("StepInput")
        late = {"dueDate": date(2026, 3, 9)}
        assert mark_of(request, "dueDate", {**late, "status": "InProgress"},
                       today=TODAY) == "overdue"
        assert mark_of(request, "dueDate", {**late, "status": "Initial"},
                       today=TODAY) == "overdue"
        for status in ("Completed", "Rejected", "Canceled"):
            assert mark_of(request, "dueDate", {**late, "status": status},
                           today=TODAY) is None
        assert mark_of(request, "dueDate", {"dueDate": TODAY, "status": "Initial"},
                       today=TODAY) is None
        # A step input's amount is what the step used, not a stock that runs out.
        assert mark_of(step_input, "amount", {"amount": 0.0, "unit": "µL"},
                       today=TODAY, low=LOW) is None


def test_the_setting_is_parsed_and_checked(tmp_path: Path) -> None:
    environ = {"LABAPP_INSTANCE_PATH": str(tmp_path)}
    assert load_settings(environ=environ)["LOW_AMOUNT"] == {
        "µl": 10.0, "ml": 0.01, "µg": 1000.0, "mg": 1.0, "g": 0.001}
    assert load_settings(environ={**environ, "LABAPP_LOW_AMOUNT": " mL = 2 , "})[
        "LOW_AMOUNT"] == {"mL": 2.0}
    assert load_settings(environ={**environ, "LABAPP_LOW_AMOUNT": ""})["LOW_AMOUNT"] == {}
    for bad in ("mL", "=3", "mL=-1", "mL=many", "mL=nan"):
        with pytest.raises(ConfigError, match="LABAPP_LOW_AMOUNT"):
            load_settings(environ={**environ, "LABAPP_LOW_AMOUNT": bad})
