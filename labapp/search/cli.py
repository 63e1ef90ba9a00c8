"""``flask --app labapp search rebuild`` and ``flask --app labapp search status``.

``flask --app labapp search worker`` is the worker's old name (:mod:`labapp.worker`),
added to this group by :func:`labapp.create_app`."""
from __future__ import annotations

from datetime import UTC, datetime

import click
from flask.cli import with_appcontext
from sqlalchemy import func, select

from labapp.db import db, own_read
from labapp.model import Entity
from labapp.search import index, indexer
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
    click.echo(f"Indexed {count} entities into {indexer.index_path()}.")


@search_cli.command("status")
@with_appcontext
def status_command() -> None:
    """Queue length, documents, index size and the time of the last index commit."""
    path = indexer.index_path()
    with own_read():
        click.echo(f"queue: {indexer.queue_length()} changes waiting")
        click.echo(f"worker: {'running' if indexer.worker_alive() else 'not running'}")
    try:
        stats = index.stats(path)
    except index.IndexUnavailable as error:
        click.echo(f"index: unavailable ({error}); run `flask --app labapp search rebuild`")
        raise SystemExit(1) from None
    last = max(item.stat().st_mtime for item in path.iterdir())
    click.echo(f"documents: {stats['documents']}")
    click.echo(f"index size: {stats['bytes'] / 1e6:.1f} MB")
    click.echo(f"last indexed: {datetime.fromtimestamp(last, UTC).isoformat(timespec='seconds')}")
