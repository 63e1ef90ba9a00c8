"""``flask --app labapp search rebuild`` and ``flask --app labapp search status``.

``flask --app labapp search worker`` is the worker's old name (:mod:`labapp.worker`),
added to this group by :func:`labapp.create_app`."""
from __future__ import annotations

import click
from flask.cli import with_appcontext
from sqlalchemy import func, select

from labapp.db import db, own_read
from labapp.model import Entity
from labapp.search import backend, indexer
from labapp.search.analysis import IndexUnavailable
from labapp.search.rebuild import rebuild_index


@click.group("search")
def search_cli() -> None:
    """The full-text search index."""


@search_cli.command("rebuild")
@with_appcontext
def rebuild_command() -> None:
    """Rebuild the index from the database (the app keeps serving meanwhile)."""
    total = db.session.scalar(select(func.count()).select_from(Entity)) or 0
    with click.progressbar(length=total, label="Indexing entities") as bar:
        count = rebuild_index(progress=bar.update)
    click.echo(f"Indexed {count} entities ({backend.current().name}).")


@search_cli.command("status")
@with_appcontext
def status_command() -> None:
    """Backend, queue length, documents, their size and the time of the last write."""
    search = backend.current()
    with own_read():
        click.echo(f"queue: {indexer.queue_length()} changes waiting")
        click.echo(f"worker: {'running' if indexer.worker_alive() else 'not running'}")
        try:
            status = search.status()
        except IndexUnavailable as error:
            click.echo(f"index: unavailable ({error}); run `flask --app labapp search rebuild`")
            raise SystemExit(1) from None
    click.echo(f"documents: {status.documents}")
    if status.bytes is not None:
        click.echo(f"index size: {status.bytes / 1e6:.1f} MB")
    if status.last_written is not None:
        click.echo(f"last indexed: {status.last_written.isoformat(timespec='seconds')}")
    click.echo(f"backend: {search.name} ({status.where})")
