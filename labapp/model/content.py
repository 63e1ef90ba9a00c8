"""Content attached to other entities: notes and files."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from labapp.db import Model
from labapp.model.base import Entity, ref_column, subclass_id
from labapp.model.types import UtcDateTime


class Note(Entity):
    __tablename__ = "note"

    id: Mapped[str] = subclass_id()
    subject_class: Mapped[str | None] = mapped_column(String(32))
    subject_id: Mapped[str | None] = ref_column("*")
    content: Mapped[str | None] = mapped_column(Text)


class File(Entity):
    """File metadata; the content lives once per SHA-256 in the content store (a folder, or
    :class:`FileContent` rows with ``LABAPP_FILE_STORE=database``)."""

    __tablename__ = "file"

    id: Mapped[str] = subclass_id()
    subject_class: Mapped[str | None] = mapped_column(String(32))
    subject_id: Mapped[str | None] = ref_column("*")
    media_type: Mapped[str | None] = mapped_column(String(255))
    # Set only from stored content: a client naming a digest could read others' files.
    size: Mapped[int | None] = mapped_column(BigInteger, info={"readOnly": True})
    sha256: Mapped[str | None] = mapped_column(String(64), index=True,
                                               info={"readOnly": True})


# The sequence that numbers contents in the database store (PostgreSQL only: the store is
# refused on SQLite).
CONTENT_ID_SEQUENCE = "file_content_id_seq"


class FileContent(Model):
    """One content of the database store (``LABAPP_FILE_STORE=database``): its digest, size
    and the number its :class:`FileContentChunk` rows carry. Written in the same transaction
    as its chunks, so a committed row always has all of them (``labapp.content_rows``)."""

    __tablename__ = "file_content"

    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    content_id: Mapped[int] = mapped_column(BigInteger, unique=True)
    size: Mapped[int] = mapped_column(BigInteger)
    stored_utc: Mapped[datetime] = mapped_column(UtcDateTime)


class FileContentChunk(Model):
    """``seq``-th piece of a content of the database store, every piece but the last exactly
    ``labapp.content_rows.CHUNK`` bytes (so a byte offset names its row)."""

    __tablename__ = "file_content_chunk"

    content_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    data: Mapped[bytes] = mapped_column(LargeBinary)
