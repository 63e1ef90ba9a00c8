"""The SQL statements a block of a test sends, recorded on the application's engine."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from flask import Flask
from sqlalchemy import event

from labapp.db import db


@contextmanager
def statements(app: Flask, keep: Callable[[str], bool] = lambda _statement: True,
               ) -> Iterator[list[str]]:
    """The SQL statements the database receives inside the block, as they come, but those
    ``keep`` refuses."""
    seen: list[str] = []

    def record(_connection: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if keep(statement):
            seen.append(statement)

    with app.app_context():
        engine = db.engine
    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)
