"""``flask --app labapp sync``: the same synchronisation as ``POST /api/sync``, with a
progress bar. (``sync restore``, issue 14's exports, hangs off the same group.)"""
from __future__ import annotations

import json

import click
from flask import current_app
from flask.cli import with_appcontext

from labapp.datamodel.service import STEPS
from labapp.datamodel.synchronise import run_sync
from labapp.errors import AppError


@click.group("sync", invoke_without_command=True)
@click.pass_context
@with_appcontext
def sync_cli(context: click.Context) -> None:
    """Bring the database in line with the data model (run alone), or a sync subcommand."""
    if context.invoked_subcommand is not None:
        return
    try:
        with click.progressbar(length=len(STEPS), label="Synchronising",
                               item_show_func=lambda step: step) as bar:
            report = run_sync(current_app, progress=lambda step: bar.update(1, step))
    except AppError as error:
        raise click.ClickException(error.detail) from None
    click.echo(json.dumps(report, indent=2))
    click.echo("The database matches the data model." if not report["changed"]
               else "The database was brought in line with the data model.")
