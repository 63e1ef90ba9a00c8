"""Access grants: Read or Write on a department or a project, to a user or a department.

A grantee holds at most one grant per department or project; the access service updates the
existing row instead of adding a second (NULLs make a unique constraint useless here).
"""
from __future__ import annotations

from sqlalchemy import CheckConstraint, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from labapp.db import Model

ACCESS_TYPES = ("Read", "Write")


class DepartmentAccess(Model):
    """A grant on ``department_id`` to a user or to a whole department (its members)."""

    __tablename__ = "department_access"
    __table_args__ = (
        CheckConstraint("(user_id IS NULL) <> (access_department_id IS NULL)",
                        name="one_grantee"),
        CheckConstraint("access_type IN ('Read', 'Write')", name="access_type"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    department_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("department.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[str | None] = mapped_column(
        String(64), ForeignKey("app_user.id", ondelete="CASCADE"), index=True)
    access_department_id: Mapped[str | None] = mapped_column(
        String(64), ForeignKey("department.id", ondelete="CASCADE"), index=True)
    access_type: Mapped[str] = mapped_column(String(8))


class ProjectAccess(Model):
    """A grant on ``project_id`` to a user or to a department (its members)."""

    __tablename__ = "project_access"
    __table_args__ = (
        CheckConstraint("(user_id IS NULL) <> (department_id IS NULL)", name="one_grantee"),
        CheckConstraint("access_type IN ('Read', 'Write')", name="access_type"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    project_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("project.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[str | None] = mapped_column(
        String(64), ForeignKey("app_user.id", ondelete="CASCADE"), index=True)
    department_id: Mapped[str | None] = mapped_column(
        String(64), ForeignKey("department.id", ondelete="CASCADE"), index=True)
    access_type: Mapped[str] = mapped_column(String(8))
