"""A small lab made through ``POST /api/entity`` as the administrator, for the view and dataset
tests. Department A owns everything but one sample; project P (of A) holds experiment EXP1.

| id    | class      | status     | department | project | notes                                 |
|-------|------------|------------|------------|---------|---------------------------------------|
| EXP1  | Experiment | InProgress | A          | P       | steps STP1..STP4                      |
| EXP2  | Experiment | Initial    | A          |         | no steps                              |
| STP1  | Step       | Initial    | A          | P       | of EXP1, stepIndex 1                  |
| STP2  | Step       | InProgress | A          | P       | of EXP1, stepIndex 2                  |
| STP3  | Step       | Completed  | A          | P       | of EXP1, stepIndex 3                  |
| STP4  | Step       | Completed  | A          | P       | of EXP1, stepIndex 4                  |
| LOC1  | Location   | Active     | A          |         | Freezer, capacity 3, "Lab / Freezer"  |
| LOC2  | Location   | Active     | A          |         | Box in LOC1, unlimited                |
| PLT1  | Plate      | Initial    | A          |         | in LOC1                               |
| SAM1  | Sample     | Initial    | A          | P       | EXP1/STP1, in LOC1, amount 1.5        |
| SAM2  | Sample     | InProgress | A          | P       | on PLT1 well B07 (stored via plate)   |
| SAM3  | Sample     | Completed  | A          |         | EXP2, in LOC1, amount 10              |
| SAMB  | Sample     | Initial    | B          |         | of EXP1/STP2 (in A), on PLT1, LOC2    |
| SIN1  | StepInput  | Initial    | A          | P       | input SAM1 of STP2, amount 0.5 ml     |

Ids are prefixed with ``QV-`` so they cannot meet other tests' rows.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import update

from labapp.db import transaction
from labapp.model import Location
from tests.conftest import ApiClient
from tests.entities.conftest import save

HOME_PATH = "Lab / Freezer"


def qv(name: str) -> str:
    """The id of a row of this lab."""
    return f"QV-{name}"


def _items(a: str, b: str, p: str) -> list[dict[str, Any]]:
    own = {"departmentID": a}
    in_project = {"departmentID": a, "projectID": p}
    return [
        {"eClass": "Experiment", "id": qv("EXP1"), "name": "Growth curve",
         "status": "InProgress", "startDate": "2026-01-10", **in_project},
        {"eClass": "Experiment", "id": qv("EXP2"), "name": "Stability", **own},
        *({"eClass": "Step", "id": qv(f"STP{index}"), "name": f"Step {index}", "status": status,
           "experimentID": qv("EXP1"), "stepIndex": index, **in_project}
          for index, status in ((1, "Initial"), (2, "InProgress"), (3, "Completed"),
                                (4, "Completed"))),
        {"eClass": "Location", "id": qv("LOC1"), "name": "Freezer", "locationType": "Freezer",
         "capacity": 3, **own},
        {"eClass": "Location", "id": qv("LOC2"), "name": "Box", "locationType": "Box",
         "parentID": qv("LOC1"), **own},
        {"eClass": "Plate", "id": qv("PLT1"), "name": "Plate one", "locationID": qv("LOC1"),
         **own},
        {"eClass": "Sample", "id": qv("SAM1"), "name": "Alpha", "experimentID": qv("EXP1"),
         "stepID": qv("STP1"), "locationID": qv("LOC1"), "amount": 1.5, "unit": "ml",
         "dateTaken": "2026-01-31", "attributes": {"batch": "B1", "ph": 7.5}, **in_project},
        {"eClass": "Sample", "id": qv("SAM2"), "name": "beta", "status": "InProgress",
         "plateID": qv("PLT1"), "well": "B07", "attributes": {"batch": "B2", "ph": 6},
         **in_project},
        {"eClass": "Sample", "id": qv("SAM3"), "name": "Gamma", "status": "Completed",
         "experimentID": qv("EXP2"), "locationID": qv("LOC1"), "amount": 10.0, **own},
        {"eClass": "Sample", "id": qv("SAMB"), "name": "Bravo", "experimentID": qv("EXP1"),
         "stepID": qv("STP2"), "locationID": qv("LOC2"), "departmentID": b,
         "projectID": None},
        {"eClass": "StepInput", "id": qv("SIN1"), "name": "Input one", "stepID": qv("STP2"),
         "inputID": qv("SAM1"), "inputPosition": 1, "amount": 0.5, "unit": "ml",
         **in_project},
    ]


@pytest.fixture
def lab(app: Flask, admin: ApiClient, department: Callable[..., str],
        project: Callable[..., str]) -> dict[str, Any]:
    """The lab above; answers the ids of departments A and B and project P."""
    a, b = department("QV Department A"), department("QV Department B")
    p = project("QV Project P", departmentID=a)
    save(admin, *_items(a, b, p))
    # Put on the plate once stored: a sample placed before its plate keeps its own location.
    save(admin, {"eClass": "Sample", "id": qv("SAMB"), "plateID": qv("PLT1")}, status=200)
    with app.app_context(), transaction() as session:  # maintained by storage, not the API
        session.execute(update(Location).where(Location.id == qv("LOC1"))
                        .values(hierarchy=HOME_PATH))
    return {"A": a, "B": b, "P": p}


@pytest.fixture
def bob(member: Callable[..., ApiClient], lab: dict[str, Any]) -> ApiClient:
    """A member of department B only (user ``qv-bob``)."""
    return member("qv-bob", department_id=lab["B"])


def ids(rows: list[dict[str, Any]]) -> list[str]:
    """The ids of rows of this lab, in order."""
    return [row["id"] for row in rows if row["id"].startswith("QV-")]
