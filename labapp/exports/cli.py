"""``flask --app labapp sync save`` and ``flask --app labapp sync restore FILE``.

The data model feature owns the ``sync`` group itself (``flask sync`` brings the database in
line with the model, ``labapp/datamodel/cli.py``); ``create_app`` adds these two commands to
it.
"""
from __future__ import annotations

from pathlib import Path

import click
from flask import current_app
from flask.cli import with_appcontext
from flask_migrate import upgrade

from labapp import sqlite_stats
from labapp.blobs import content_of
from labapp.dashboards import tally_folding
from labapp.db import db
from labapp.exports import progress, service
from labapp.exports.archive import ArchiveError
from labapp.exports.restore import RestoreRefused, restore, verify
from labapp.storage import counts as location_counts


@click.command("save")
@with_appcontext
def save_command() -> None:
    """Write an export of everything to the instance's sync/ folder (refused while another
    export runs, on this host or, on PostgreSQL, on any host)."""
    instance = current_app.config["LABAPP"]["INSTANCE_PATH"]
    with click.progressbar(length=1, label="Exporting", show_pos=True) as bar:
        def report(done: int, total: int) -> None:
            bar.length = max(total, 1)
            bar.update(done - bar.pos)

        try:
            with progress.holding(instance, db.engine):
                result = service.save_export(db.engine, instance, content_of, report)
        except progress.ExportRunning as running:
            raise click.ClickException(f"{running}; try again when it has finished") from None
    click.echo(f"wrote {result.filename}: {result.entities} entities, {result.bytes} bytes")


@click.command("restore")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True,
              help="Replace the data of a database that is not empty.")
@with_appcontext
def restore_command(file: Path, force: bool) -> None:
    """Load the export FILE into this (empty) database, after checking its checksums.

    The schema is brought up to date first (the migrations of `flask init`).
    """
    upgrade(directory=current_app.extensions["migrate"].directory)
    try:
        checked = verify(file, {table.name: table for table in service.exported_tables()})
        click.echo(f"checksums verified: {sum(checked.rows.values())} rows, "
                   f"{len(checked.manifest.get('blobs', {}))} file contents")
        with click.progressbar(length=checked.lines, label="Restoring",
                               show_pos=True) as bar:
            restore(db.engine, file, force=force, progress=bar.update, checked=checked)
    except (ArchiveError, RestoreRefused) as error:
        raise click.ClickException(str(error)) from None
    click.echo(f"restored {checked.manifest.get('entities', 0)} entities from {file.name}")
    tally_folding.fold()
    location_counts.fold()
    if sqlite_stats.refresh():
        click.echo("gathered the planner statistics (SQLite ANALYZE)")

