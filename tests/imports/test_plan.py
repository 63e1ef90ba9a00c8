"""Dry run and commit: outcomes of every row, updates, references, storage, all or nothing."""
from __future__ import annotations

from typing import Any

from flask import Flask
from sqlalchemy import func, select

from labapp.db import db
from labapp.model import Entity, Sample
from tests.imports.conftest import Importer, errors, outcomes


def _samples(app: Flask) -> dict[str, Any]:
    with app.app_context():
        return {s.name: s for s in db.session.scalars(select(Sample))}


def test_a_csv_creates_samples(app: Flask, importer: Importer, write_csv) -> None:
    path = write_csv("Name;Volume (mL);Expiry\nS-1;1,5;2026-03-01\nS-2;0,25;24.12.2026\n")
    plan, ids = importer.commit(path)
    assert outcomes(plan) == [(2, "create"), (3, "create")], errors(plan)
    assert len(ids) == 2
    stored = _samples(app)
    assert stored["S-1"].amount == 1.5 and stored["S-1"].unit == "mL"
    assert str(stored["S-2"].expiry_date) == "2026-12-24"
