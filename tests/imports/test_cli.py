"""``flask --app labapp import FILE --class Sample``: the same jobs, run in the shell."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from flask import Flask
from flask.testing import FlaskCliRunner
from sqlalchemy import select

from labapp.db import db, transaction
from labapp.imports import saved
from labapp.model import ImportJob, Sample
from labapp.model.registry import existing_class
from tests.imports.conftest import actor_of
from tests.imports.uploading import BAD_CSV, GOOD_CSV, stored


def _names(app: Flask) -> list[str]:
    with app.app_context():
        return sorted(db.session.scalars(select(Sample.name)))


def test_a_dry_run_prints_the_counts_and_writes_nothing(
        app: Flask, runner: FlaskCliRunner, write_csv: Callable[..., Path]) -> None:
    before = stored(app)["Entity"]
    result = runner.invoke(args=["import", str(write_csv(GOOD_CSV)), "--class", "sample",
                                 "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "Reading rows" in result.output
    assert "3 create, 0 update, 0 unchanged, 0 error" in result.output
    assert "dry run done, nothing written" in result.output
    assert stored(app)["Entity"] == before
    with app.app_context():
        job = db.session.scalars(select(ImportJob)).one()
        assert job.owner_id == "admin" and job.dry_run and job.status == "done"


def test_an_import_writes_every_row(app: Flask, runner: FlaskCliRunner,
                                    write_csv: Callable[..., Path]) -> None:
    result = runner.invoke(args=["import", str(write_csv(GOOD_CSV)), "--class", "Sample"])
    assert result.exit_code == 0, result.output
    assert "Writing entities" in result.output
    assert _names(app) == ["S-1", "S-2", "S-3"]


def test_row_errors_are_printed_and_fail_the_command(
        app: Flask, runner: FlaskCliRunner, write_csv: Callable[..., Path]) -> None:
    result = runner.invoke(args=["import", str(write_csv(BAD_CSV)), "--class", "Sample"])
    assert result.exit_code == 1
    assert "row 3: Volume (mL):" in result.output
    assert "nothing was imported" in result.output
    assert _names(app) == []
    dry = runner.invoke(args=["import", str(write_csv(BAD_CSV)), "--class", "Sample",
                              "--dry-run"])
    assert dry.exit_code == 1 and "2 create, 0 update, 0 unchanged, 1 error" in dry.output


def test_a_saved_mapping_and_another_user(app: Flask, runner: FlaskCliRunner,
                                          make_user: Callable[..., str],
                                          write_csv: Callable[..., Path]) -> None:
    make_user("alice")
    with app.app_context(), transaction():
        saved.save(actor_of("alice"), existing_class("Sample"), "tubes", {"Tube": "name"})
    result = runner.invoke(args=["import", str(write_csv("Tube\nT-9\n")), "--class",
                                 "Sample", "--mapping", "tubes", "--as", "alice"])
    assert result.exit_code == 0, result.output
    assert _names(app) == ["T-9"]
    with app.app_context():
        assert db.session.scalars(select(ImportJob.owner_id)).one() == "alice"


def test_bad_input_is_an_error_message(runner: FlaskCliRunner,
                                       write_csv: Callable[..., Path]) -> None:
    unknown = runner.invoke(args=["import", str(write_csv(GOOD_CSV)), "--class", "Nothing"])
    assert unknown.exit_code == 1 and "no entity class 'Nothing'" in unknown.output
    nobody = runner.invoke(args=["import", str(write_csv(GOOD_CSV)), "--class", "Sample",
                                 "--as", "nobody"])
    assert nobody.exit_code == 1 and "no active user 'nobody'" in nobody.output
    empty = runner.invoke(args=["import", str(write_csv("")), "--class", "Sample"])
    assert empty.exit_code == 1 and "is empty" in empty.output
