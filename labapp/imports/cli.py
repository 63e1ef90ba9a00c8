"""``flask --app labapp import FILE --class Sample``: a spreadsheet import from the shell.

The command queues a job as the API does, claims it at once (no worker takes it) and runs it
in the process with a progress bar; it prints the counts and the first errors and exits 1
when any row failed or the job did.
"""
from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any

import click
from flask import current_app
from flask.cli import with_appcontext

from labapp.access.grant_sets import actor_for
from labapp.db import db, transaction
from labapp.errors import AppError
from labapp.imports import jobs, service, uploads
from labapp.model import ImportJob, ImportRow, User
from labapp.model.imports import ROW_OUTCOMES

SHOWN_ERRORS = 20


@click.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--class", "eclass", required=True, help="The entity class to import into.")
@click.option("--mapping", help="A saved mapping's name (default: the mapping saved for the "
                                "file's name, else the automatic one).")
@click.option("--dry-run", is_flag=True, help="Only tell each row's outcome; write nothing.")
@click.option("--match", help="A unique field finding the entity a row updates.")
@click.option("--sheet", help="The sheet of an XLSX workbook (default: the first).")
@click.option("--as", "username", default="admin", show_default=True,
              help="The user who imports (their access rules apply).")
@with_appcontext
def import_command(file: Path, eclass: str, mapping: str | None, dry_run: bool,
                   match: str | None, sheet: str | None, username: str) -> None:
    """Import the CSV or XLSX FILE into a class: every row or, on any error, none."""
    user = db.session.get(User, username)
    if user is None or not user.is_active:
        raise click.ClickException(f"no active user {username!r}")
    actor = actor_for(user, method=None,
                      on_premises=current_app.config["LABAPP"]["ON_PREMISES"])
    with file.open("rb") as stream:
        upload = uploads.receive(stream)
    try:
        with transaction():
            job = service.start_import(actor, upload, service.ImportRequest(
                eclass=eclass, filename=file.name, mapping=mapping, dry_run=dry_run,
                match=match, sheet=sheet))
            jobs.claim(job.id)
    except AppError as error:
        raise click.ClickException(error.detail) from None
    finally:
        uploads.discard(upload.path)
    with ExitStack() as bars:
        shown: dict[str, Any] = {}

        def report(phase: str, done: int, total: int | None) -> None:
            if phase not in shown:
                shown.clear()
                bars.close()
                shown[phase] = bars.enter_context(click.progressbar(
                    length=max(total or done, 1), show_pos=True,
                    label="Reading rows" if phase == "reading" else "Writing entities"))
            bar = shown[phase]
            bar.length = max(total or done, 1)
            bar.update(done - bar.pos)

        finished = jobs.run(job.id, report)
    _summarise(finished)


def _summarise(job: ImportJob) -> None:
    """Print the counts and the first errors; exit 1 when the job failed or a row did."""
    counts = service.counts_of(job)
    click.echo(", ".join(f"{counts[outcome]} {outcome}" for outcome in ROW_OUTCOMES))
    page = service.rows_page(job, top=SHOWN_ERRORS, skip=0, outcome="error")
    for row in page.data:
        click.echo(_row_errors(row), err=True)
    if page.total > len(page.data):
        click.echo(f"… and {page.total - len(page.data)} more rows with errors", err=True)
    if job.status == "failed":
        raise click.ClickException(job.error or "the import failed")
    if counts["error"]:
        raise SystemExit(1)
    click.echo(f"import {job.id}: {'dry run done, nothing written' if job.dry_run else 'done'}")


def _row_errors(row: ImportRow) -> str:
    messages = "; ".join(f"{error.get('column') or 'row'}: {error.get('message')}"
                         for error in row.errors)
    return f"row {row.row}: {messages}"
