"""The entity base: table ``entity`` with the common fields of every class.

Each class of the data model is a joined-table subclass with its own table. Column ``info``
carries the API facts the registry reads: ``ref`` (referenced class, ``*`` for any),
``readOnly``, ``createOnly``, ``hidden`` and ``api`` (the JSON name when it is not the
camelCase of the attribute).
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, declared_attr, mapped_column

from labapp.db import Model
from labapp.model.types import JsonObject, UtcDateTime

ENTITY_TABLE = "entity"


def ref_column(target: str, table: str = ENTITY_TABLE, *, index: bool = True,
               **info: Any) -> Mapped[Any]:
    """A nullable reference to an entity of class ``target`` (``*`` = any class), indexed
    unless ``index`` is False (a table index that starts with the column serves instead)."""
    return mapped_column(String(64), ForeignKey(f"{table}.id"), index=index, nullable=True,
                         info={"ref": target, **info})


def subclass_id() -> Mapped[str]:
    """Primary key of a subclass table: the id of its row in ``entity``."""
    return mapped_column(String(64), ForeignKey(f"{ENTITY_TABLE}.id", ondelete="CASCADE"),
                         primary_key=True)


class Entity(Model):
    """Common fields of every entity; ``eclass`` selects the subclass."""

    __tablename__ = ENTITY_TABLE

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    eclass: Mapped[str] = mapped_column(String(32), index=True,
                                        info={"api": "eClass", "readOnly": True})
    name: Mapped[str] = mapped_column(String(255), index=True)
    description: Mapped[str | None] = mapped_column(Text)
    barcode: Mapped[str | None] = mapped_column(String(128), unique=True)
    status: Mapped[str] = mapped_column(String(32))
    type: Mapped[str] = mapped_column(String(64), default="Other")
    user_id: Mapped[str | None] = ref_column("User")
    department_id: Mapped[str | None] = ref_column("Department")
    project_id: Mapped[str | None] = ref_column("Project")
    attributes: Mapped[dict[str, Any]] = mapped_column(JsonObject, default=dict)
    created_by: Mapped[str] = mapped_column(String(64), info={"ref": "User", "readOnly": True})
    created_utc: Mapped[datetime] = mapped_column(UtcDateTime, index=True,
                                                  info={"readOnly": True})
    modified_by: Mapped[str] = mapped_column(String(64), info={"ref": "User", "readOnly": True})
    modified_utc: Mapped[datetime] = mapped_column(UtcDateTime, index=True,
                                                   info={"readOnly": True})
    version: Mapped[int] = mapped_column(Integer, default=1, info={"readOnly": True})

    @declared_attr.directive
    def __table_args__(cls) -> tuple[Any, ...]:
        # Field suggestions walk one class's statuses and types along these:
        # labapp/query/suggest.py.
        if cls.__tablename__ == ENTITY_TABLE:
            # Counting one class's statuses as a reader (the status-counts widget of
            # dashboards) reads this one alone: the visibility columns are in it.
            return (Index("ix_entity_eclass_status", "eclass", "status", "id"),
                    Index("ix_entity_eclass_type", "eclass", "type", "id"),
                    Index("ix_entity_eclass_status_access", "eclass", "status",
                          "department_id", "project_id"))
        return ()

    @declared_attr.directive
    def __mapper_args__(cls) -> dict[str, Any]:
        if cls.__tablename__ == ENTITY_TABLE:
            return {"polymorphic_on": "eclass"}
        # Subclasses may reference entity.id from other columns too (originID, subjectID...),
        # so the inheritance join is named explicitly.
        return {"polymorphic_identity": cls.__name__,
                "inherit_condition": cls.__table__.c.id == Entity.__table__.c.id}

    def __repr__(self) -> str:
        return f"<{self.eclass} {self.id}>"
