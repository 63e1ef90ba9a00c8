"""The search queue: entities whose index documents are to be rewritten."""
from __future__ import annotations

from sqlalchemy import Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from labapp.db import Model


class SearchQueue(Model):
    """One pending change: the entity ``entity_id`` was written (or deleted) and its search
    document must be rewritten. Database triggers add the rows in the transaction of the
    change (labapp/search/indexer.py reads them); a row goes once the index has committed."""

    __tablename__ = "search_queue"
    # A drain deletes the rows it indexed by id: SQLite must never hand a freed id out
    # again (its default rowid restarts at 1 once the table is empty).
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    entity_id: Mapped[str] = mapped_column(String(64))
