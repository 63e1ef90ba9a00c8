"""``flask --app labapp init`` and ``flask --app labapp users create``; every command is in
the README (``files gc`` has its own tests in tests/files/test_gc.py)."""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import click
import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from sqlalchemy import select, text

from labapp import PROJECT_ROOT
from labapp.db import db
from labapp.model import Department, Sequence, User
from labapp.model.registry import classes
from labapp.schema import schema_state
from labapp.sequences.service import format_value
from tests.conftest import DEFAULT_DEPARTMENT, run_init

ADMIN_PASSWORD = "init-admin-password"
SNAPSHOT_TABLES = ("entity", "department", "app_user", "user_role", "role", "sequence",
                   "audit_event", "entity_event", "alembic_version")
GENERATED = re.compile(r"Generated password for 'admin' \(shown only now\): (\S+)")
BOB_PASSWORD = "longenough-password"


def create_args(username: str = "bob", department: str = DEFAULT_DEPARTMENT,
                role: str = "DATA_MANAGER") -> list[str]:
    """The ``users create`` command line, password from standard input."""
    return ["users", "create", username, "--name", "Bob B", "--department", department,
            "--role", role, "--password-stdin"]


def snapshot(app: Flask) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the tables ``init`` and ``users create`` write, in a stable order."""
    with app.app_context():
        return {table: sorted((tuple(row) for row in db.session.execute(
                    text(f"SELECT * FROM {table}"))), key=repr)
                for table in SNAPSHOT_TABLES}


def can_log_in(client: FlaskClient, username: str, password: str) -> bool:
    response = client.post("/api/auth/login", json={"username": username, "password": password})
    return response.status_code == 200 and bool(response.get_json()["accessToken"])


@pytest.fixture
def initialised(fresh_app: Callable[..., Flask]) -> tuple[Flask, str]:
    """A new database after one ``init`` with a known admin password, and init's output."""
    application = fresh_app(ADMIN_PASSWORD=ADMIN_PASSWORD)
    return application, run_init(application)


def test_init_creates_schema_roles_sequences_department_and_admin(
        initialised: tuple[Flask, str]) -> None:
    application, output = initialised
    with application.app_context():
        assert schema_state().up_to_date
        assert set(db.session.scalars(text("SELECT name FROM role"))) == {
            "ADMIN", "DATA_MANAGER", "DATA_MANAGER_PROJECT_WRITE"}

        sequences = {sequence.id: sequence for sequence in db.session.scalars(select(Sequence))}
        assert set(sequences) == {spec.name for spec in classes() if spec.prefix}
        for spec in classes():
            if spec.prefix:
                assert sequences[spec.name].prefix == spec.prefix
                assert sequences[spec.name].min_digits == 5
        sample = sequences["Sample"]
        assert sample.next_value == 1
        assert format_value(sample.prefix, sample.next_value, sample.min_digits) == "SAM00001"
        assert sequences["Department"].next_value == 2  # DEP00001 was drawn

        department = db.session.get(Department, DEFAULT_DEPARTMENT)
        assert department is not None and department.status == "Active"
        assert department.department_id == DEFAULT_DEPARTMENT

        admin = db.session.get(User, "admin")
        assert admin is not None and admin.is_active
        assert admin.roles == ["ADMIN"]
        assert admin.department_id == DEFAULT_DEPARTMENT
        audited = set(db.session.scalars(text(
            "SELECT entity_id FROM audit_event WHERE action = 'create'")))
        assert audited == {DEFAULT_DEPARTMENT, "admin"}
    assert "created user admin" in output
    assert ADMIN_PASSWORD not in output
    assert can_log_in(application.test_client(), "admin", ADMIN_PASSWORD)


def test_init_again_changes_nothing(initialised: tuple[Flask, str]) -> None:
    application, _ = initialised
    before = snapshot(application)

    output = run_init(application)

    assert snapshot(application) == before
    assert "created" not in output
    assert before["role"] and before["sequence"] and before["app_user"]


def test_generated_admin_password_is_printed_once_and_works(
        fresh_app: Callable[..., Flask]) -> None:
    application = fresh_app(ADMIN_PASSWORD=None)
    assert application.config["LABAPP"]["ADMIN_PASSWORD"] is None

    first = run_init(application)
    second = run_init(application)

    found = GENERATED.findall(first)
    assert len(found) == 1
    password = found[0]
    assert len(password) >= 10
    assert "password" not in second.lower() and password not in second
    assert can_log_in(application.test_client(), "admin", password)


def test_users_create(app: Flask, runner: FlaskCliRunner, client: FlaskClient) -> None:
    result = runner.invoke(args=create_args(), input=f"{BOB_PASSWORD}\n")

    assert result.exit_code == 0, result.output
    assert "created user bob" in result.output
    assert BOB_PASSWORD not in result.output
    with app.app_context():
        bob = db.session.get(User, "bob")
        assert bob is not None
        assert (bob.name, bob.department_id, bob.roles) == ("Bob B", DEFAULT_DEPARTMENT,
                                                            ["DATA_MANAGER"])
        assert bob.password_hash and BOB_PASSWORD not in bob.password_hash
    assert can_log_in(client, "bob", BOB_PASSWORD)


@pytest.mark.parametrize(("args", "password", "message"), [
    (create_args(department="DEP99999"), BOB_PASSWORD, "Unknown department 'DEP99999'"),
    (create_args(role="NO_SUCH_ROLE"), BOB_PASSWORD, "Unknown role(s): NO_SUCH_ROLE"),
    (create_args(username="admin"), BOB_PASSWORD, "'admin' is already taken"),
    (create_args(), "short", "at least 10 characters"),
    (create_args(username="bad name!"), BOB_PASSWORD, "A username is 1 to 64"),
], ids=["unknown-department", "unknown-role", "duplicate-username", "short-password",
        "bad-username"])
def test_users_create_refuses(app: Flask, runner: FlaskCliRunner, args: list[str],
                              password: str, message: str) -> None:
    before = snapshot(app)

    result = runner.invoke(args=args, input=f"{password}\n")

    assert result.exit_code != 0
    assert message in result.output
    assert "Traceback" not in result.output
    assert snapshot(app) == before


def _command_lines(command: click.Command, words: list[str]) -> Iterator[str]:
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from _command_lines(sub, [*words, name])
    else:
        yield " ".join(words)


def test_every_command_is_in_the_readme(app: Flask) -> None:
    """Each of labapp's commands (Flask-Migrate's ``db`` group documents itself) appears in
    the README's CLI section as ``flask --app labapp <command>``."""
    readme = (PROJECT_ROOT / "README.md").read_text()
    cli_section = readme.split("\n## CLI\n", 1)[1].split("\n## ", 1)[0]
    commands = [line for line in _command_lines(app.cli, []) if not line.startswith("db ")]

    assert {"init", "users create", "files gc"} <= set(commands)
    missing = [line for line in commands if f"flask --app labapp {line}" not in cli_section]
    assert missing == []
