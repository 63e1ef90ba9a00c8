"""``flask --app labapp files gc``: remove content no File references.

Rejected uploads and batches take their content out of the store themselves
(:mod:`labapp.blobs`); what is left for this command is what a crash or an
earlier version of labapp left behind. It never removes a blob a live upload or batch has
pinned (database store: holds locked), nor one younger than the grace period. It works on
the store ``LABAPP_FILE_STORE`` names, folder or database.
"""
from __future__ import annotations

import click
from flask.cli import with_appcontext

from labapp import blobs

# Digests checked (and removed) per hold of the store lock and per database query.
BATCH = 500


@click.group("files")
def files_cli() -> None:
    """Manage the content store of files."""


@files_cli.command("gc")
@click.option("--dry-run", is_flag=True,
              help="List and count what would be removed; remove nothing.")
@click.option("--grace-minutes", type=click.IntRange(min=0), default=60, show_default=True,
              help="Never remove a blob or partial upload written less than this long ago.")
@with_appcontext
def gc_command(dry_run: bool, grace_minutes: int) -> None:
    """Remove blobs no File references, stale pins and abandoned partial uploads; print how
    many blobs and bytes (with --dry-run: would be)."""
    grace_seconds = grace_minutes * 60
    # Stale pins first: a blob pinned only by a dead process is garbage in this same run.
    pins = blobs.remove_stale_pins(dry_run=dry_run)
    partial = blobs.remove_partial_uploads(grace_seconds, dry_run=dry_run)
    digests = blobs.stored_digests()
    garbage: list[blobs.Blob] = []
    with click.progressbar(length=len(digests), label="Checking blobs",
                           show_pos=True) as progress:
        for start in range(0, len(digests), BATCH):
            chunk = digests[start:start + BATCH]
            garbage += blobs.collect_garbage(chunk, grace_seconds, dry_run=dry_run)
            progress.update(len(chunk))
    if dry_run:
        for blob in garbage:
            click.echo(f"would remove {blob.sha256} ({blob.size} bytes)")
    removed = "would remove" if dry_run else "removed"
    click.echo(f"{removed} {len(garbage)} unreferenced blob(s), "
               f"{sum(blob.size for blob in garbage)} bytes, of {len(digests)} checked; "
               f"{pins} stale pin(s); {partial} abandoned partial upload(s)")
