"""Content attached to other entities: notes and files."""
from __future__ import annotations

from sqlalchemy import BigInteger, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from labapp.model.base import Entity, ref_column, subclass_id


class Note(Entity):
    __tablename__ = "note"

    id: Mapped[str] = subclass_id()
    subject_class: Mapped[str | None] = mapped_column(String(32))
    subject_id: Mapped[str | None] = ref_column("*")
    content: Mapped[str | None] = mapped_column(Text)


class File(Entity):
    """File metadata; the content lives once per SHA-256 in the instance file store."""

    __tablename__ = "file"

    id: Mapped[str] = subclass_id()
    subject_class: Mapped[str | None] = mapped_column(String(32))
    subject_id: Mapped[str | None] = ref_column("*")
    media_type: Mapped[str | None] = mapped_column(String(255))
    # Set only from stored content: a client naming a digest could read others' files.
    size: Mapped[int | None] = mapped_column(BigInteger, info={"readOnly": True})
    sha256: Mapped[str | None] = mapped_column(String(64), index=True,
                                               info={"readOnly": True})
