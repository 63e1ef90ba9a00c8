"""Factories of the import engine tests: files written in the test, the actor of a user,
and a plan or commit run the way the import worker runs them (one transaction)."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from flask import Flask

from labapp.access.actor import Actor
from labapp.access.grant_sets import actor_for
from labapp.db import db, transaction
from labapp.imports.engine import ImportPlan, commit_import, plan_import
from labapp.imports.mapping import auto_map
from labapp.imports.spreadsheets import SourceTable, open_table
from labapp.model import User
from labapp.model.registry import existing_class

# The entity tests' factories: the administrator, departments, members and grants.
from tests.entities.conftest import admin, department, grant, member  # noqa: F401


def actor_of(username: str) -> Actor:
    """The actor of a stored user (inside an application context)."""
    user = db.session.get(User, username)
    assert user is not None
    return actor_for(user, method="cli")


@pytest.fixture
def write_csv(tmp_path: Path) -> Callable[..., Path]:
    """Factory: ``write_csv("a,b\\n1,2\\n")`` writes the text (UTF-8 unless told) to a file."""
    counter = iter(range(1_000_000))

    def write(text: str, *, encoding: str = "utf-8", name: str | None = None) -> Path:
        path = tmp_path / (name or f"upload-{next(counter)}.csv")
        path.write_bytes(text.encode(encoding))
        return path

    return write


@pytest.fixture
def write_xlsx(tmp_path: Path) -> Callable[..., Path]:
    """Factory: ``write_xlsx([[header...], [cell...]])`` saves a one-sheet workbook; a
    ``prepare(sheet)`` callback may merge cells, add sheets and so on."""
    counter = iter(range(1_000_000))

    def write(rows: list[list[Any]], *, title: str = "Samples",
              prepare: Callable[[Any], None] | None = None) -> Path:
        workbook = openpyxl.Workbook()
        sheet = workbook.active
        sheet.title = title
        for row in rows:
            sheet.append(row)
        if prepare is not None:
            prepare(sheet)
        path = tmp_path / f"upload-{next(counter)}.xlsx"
        workbook.save(path)
        return path

    return write


class Importer:
    """Runs the engine as ``username`` against the test's database."""

    def __init__(self, app: Flask) -> None:
        self.app = app

    def table(self, path: Path, **options: Any) -> SourceTable:
        return open_table(path, path.name, **options)

    def plan(self, path: Path, mapping: Mapping[str, str] | None = None, *,
             eclass: str = "Sample", username: str = "admin",
             match: str | None = None) -> ImportPlan:
        with self.app.app_context(), transaction():
            table = self.table(path)
            spec = existing_class(eclass)
            chosen = auto_map(spec, table.headers) if mapping is None else mapping
            return plan_import(actor_of(username), spec, table, chosen, match=match)

    def commit(self, path: Path, mapping: Mapping[str, str] | None = None, *,
               eclass: str = "Sample", username: str = "admin",
               match: str | None = None) -> tuple[ImportPlan, list[str]]:
        """Plan and commit in one transaction, as the worker does."""
        with self.app.app_context(), transaction():
            table = self.table(path)
            spec = existing_class(eclass)
            chosen = auto_map(spec, table.headers) if mapping is None else mapping
            actor = actor_of(username)
            plan = plan_import(actor, spec, table, chosen, match=match)
            return plan, commit_import(actor, plan)


@pytest.fixture
def importer(app: Flask, admin: Any) -> Importer:  # noqa: F811
    """The engine, as the administrator unless told (``admin`` re-hashes its password)."""
    return Importer(app)


def outcomes(plan: ImportPlan) -> list[tuple[int, str]]:
    return [(outcome.row, outcome.outcome) for outcome in plan.outcomes]


def errors(plan: ImportPlan) -> dict[int, list[tuple[str, str]]]:
    return {outcome.row: [(error.column, error.message) for error in outcome.errors]
            for outcome in plan.outcomes if outcome.errors}
