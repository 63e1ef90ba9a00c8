"""``flask --app labapp search rebuild`` and ``flask --app labapp search status``."""
from __future__ import annotations

import signal
import threading
from datetime import UTC, datetime

import click
from flask.cli import with_appcontext
from sqlalchemy import func, select

from labapp.db import db
from labapp.model import Entity
from labapp.search import index, indexer, worker
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


@search_cli.command("worker")
@with_appcontext
def worker_command() -> None:
    """Index queued changes as they come (run it beside the web server; `make run` does).
    Stops on SIGTERM or Ctrl-C after the batch in hand."""
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    click.echo(f"search worker: indexing queued changes into {indexer.index_path()}")
    worker.run(stop)


@search_cli.command("status")
@with_appcontext
def status_command() -> None:
    """Queue length, documents, index size and the time of the last index commit."""
    path = indexer.index_path()
    click.echo(f"queue: {indexer.queue_length()} changes waiting")
    click.echo(f"worker: {'running' if indexer.worker_alive() else 'not running'}")
    db.session.rollback()
    try:
        stats = index.stats(path)
    except index.IndexUnavailable as error:
        click.echo(f"index: unavailable ({error}); run `flask --app labapp search rebuild`")
        raise SystemExit(1) from None
    last = max(item.stat().st_mtime for item in path.iterdir())
    click.echo(f"documents: {stats['documents']}")
    click.echo(f"index size: {stats['bytes'] / 1e6:.1f} MB")
    click.echo(f"last indexed: {datetime.fromtimestamp(last, UTC).isoformat(timespec='seconds')}")
