"""The SQL statements a block of a test sends, recorded on the application's engine."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from flask import Flask
from sqlalchemy import event

from labapp.db import db
from labapp.search.indexer import drain


@contextmanager
def statements(app: Flask, keep: Callable[[str], bool] = lambda _statement: True,
               ) -> Iterator[list[str]]:
    """The SQL statements the database receives inside the block, as they come, but those
    ``keep`` refuses.

    The block runs as a production install without a worker does: what the suite's
    application left waiting for the search index is indexed first, and inside the block
    each unit of work indexes its own changes after its commit (``SEARCH_DRAIN =
    after-commit``), so no request counts the indexing of earlier ones."""
    seen: list[str] = []

    def record(_connection: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if keep(statement):
            seen.append(statement)

    settings = app.config["LABAPP"]
    drained_before = settings["SEARCH_DRAIN"]
    with app.app_context():
        engine = db.engine
        drain()
    settings["SEARCH_DRAIN"] = "after-commit"
    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)
        settings["SEARCH_DRAIN"] = drained_before
