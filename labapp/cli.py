"""Command line: ``flask --app labapp init``, ``flask --app labapp users create`` and
``flask --app labapp users sync``.

Later tooling relies on these exact commands and options.
"""
from __future__ import annotations

import secrets
import sys
from collections.abc import Iterator

import click
from flask import current_app
from flask.cli import with_appcontext
from flask_migrate import upgrade
from sqlalchemy import select

from labapp import sqlite_stats
from labapp.access.actor import ADMIN
from labapp.auth import second_factor
from labapp.auth.ldap import DirectoryEntry
from labapp.dashboards import tally_folding
from labapp.db import db, transaction
from labapp.entities.audit import SYSTEM_ACTOR, record_created, stamp_created
from labapp.errors import AppError
from labapp.model import Department, User
from labapp.search.rebuild import ensure_search_index
from labapp.sequences.service import ensure_default_sequences, next_id
from labapp.storage import counts as location_counts
from labapp.users import directory
from labapp.users.service import create_user, ensure_roles
from labapp.webhooks import service as webhook_service
from labapp.webhooks.settings import WebhookSettings

ADMIN_USERNAME = "admin"
DEFAULT_DEPARTMENT_NAME = "Administration"


def ensure_default_department() -> tuple[str, bool]:
    """The first department (created when there is none); returns (id, created)."""
    first = db.session.scalar(select(Department.id).order_by(Department.created_utc).limit(1))
    if first is not None:
        return first, False
    department_id = next_id("Department")
    department = Department(id=department_id, name=DEFAULT_DEPARTMENT_NAME, status="Active",
                            type="Other", department_id=department_id, attributes={})
    stamp_created(department, SYSTEM_ACTOR)
    db.session.add(department)
    db.session.flush()
    record_created(department, SYSTEM_ACTOR)
    return department_id, True


@click.command("init")
@with_appcontext
def init_command() -> None:
    """Create or upgrade the schema, default roles, sequences and the admin user (idempotent)."""
    upgrade(directory=current_app.extensions["migrate"].directory)
    generated = None
    with transaction():
        for role in ensure_roles():
            click.echo(f"created role {role}")
        for sequence in ensure_default_sequences():
            click.echo(f"created sequence {sequence}")
        department_id, created = ensure_default_department()
        if created:
            click.echo(f"created department {department_id} ({DEFAULT_DEPARTMENT_NAME})")
        if db.session.get(User, ADMIN_USERNAME) is None:
            password = current_app.config["LABAPP"]["ADMIN_PASSWORD"]
            if password is None:
                password = generated = secrets.token_urlsafe(15)
            create_user(username=ADMIN_USERNAME, name="Administrator",
                        department_id=department_id, password=password, roles=[ADMIN],
                        created_by=SYSTEM_ACTOR)
            click.echo(f"created user {ADMIN_USERNAME} with role {ADMIN}")
        sealed = (second_factor.seal_under_current_key(db.session.connection())
                  + webhook_service.seal_secrets_under_current_key(WebhookSettings.current()))
        if sealed:
            click.echo(f"sealed {sealed} secret(s) under SECRET_KEY: kept in clear, or "
                       "opened only by a key of SECRET_KEY_FALLBACKS")
    if ensure_search_index():
        click.echo("built the search index")
    tally_folding.fold()
    location_counts.fold()
    if sqlite_stats.refresh():
        click.echo("gathered the planner statistics (SQLite ANALYZE)")
    if generated is not None:
        click.echo(f"Generated password for '{ADMIN_USERNAME}' (shown only now): {generated}")
    click.echo("labapp is initialised.")


@click.group("users")
def users_cli() -> None:
    """Manage users."""


@users_cli.command("create")
@click.argument("username")
@click.option("--name", required=True, help="Full name.")
@click.option("--department", "department_id", required=True, help="Home department id.")
@click.option("--role", "roles", multiple=True, help="Role to grant; repeat for several.")
@click.option("--email", default=None, help="E-mail address.")
@click.option("--password-stdin", is_flag=True,
              help="Read the password from the first line of standard input.")
@with_appcontext
def create_user_command(username: str, name: str, department_id: str, roles: tuple[str, ...],
                        email: str | None, password_stdin: bool) -> None:
    """Create USERNAME (password from stdin with --password-stdin, else prompted)."""
    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    try:
        with transaction():
            create_user(username=username, name=name, department_id=department_id,
                        password=password, roles=roles, email=email, created_by=SYSTEM_ACTOR)
    except AppError as error:
        raise click.ClickException(error.detail) from None
    click.echo(f"created user {username}")


@users_cli.command("sync")
@click.option("--dry-run", is_flag=True, help="Say what would change; change nothing.")
@with_appcontext
def sync_users_command(dry_run: bool) -> None:
    """Bring directory users, their departments and roles in line with the LDAP directory:
    create, update, deactivate (never delete); print each change."""

    def with_bar(entries: list[DirectoryEntry]) -> Iterator[DirectoryEntry]:
        with click.progressbar(entries, label="directory users", file=sys.stderr) as bar:
            yield from bar

    try:
        run = directory.synchronise(dry_run=dry_run, progress=with_bar)
    except AppError as error:
        raise click.ClickException(error.detail) from None
    for change in run.changes:
        click.echo(f"{change['action']:<10} {change['username']}: "
                   f"{directory.describe(change['detail'])}")
    would = "would be " if dry_run else ""
    click.echo(f"{run.created} {would}created, {run.updated} {would}updated, "
               f"{run.deactivated} {would}deactivated, {run.skipped} skipped, "
               f"{run.unchanged} unchanged" + (" (dry run: nothing changed)" if dry_run else ""))
