"""Per-user things that are not entities: dashboards and saved views (with their shares) and
notifications."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from labapp.db import Model
from labapp.model.types import JsonObject, UtcDateTime

SHARE_KINDS = ("user", "department", "project", "role")
NOTIFICATION_STATUSES = ("Unread", "Seen", "Read")


class DashboardShare(Model):
    """One party a dashboard is shared with: a user, a department, a project or a role.

    ``target`` names no foreign key: the party may be any of four tables (the service checks
    it exists when the share is saved)."""

    __tablename__ = "dashboard_share"
    __table_args__ = (
        CheckConstraint("kind IN ('user', 'department', 'project', 'role')", name="kind"),
        Index("ix_dashboard_share_kind_target", "kind", "target"),
    )

    dashboard_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("dashboard.id", ondelete="CASCADE"), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    target: Mapped[str] = mapped_column(String(64), primary_key=True)


class Dashboard(Model):
    """A named grid of widgets owned by one user; ``widgets`` is the validated list."""

    __tablename__ = "dashboard"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(255))
    description: Mapped[str | None] = mapped_column(Text)
    user_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("app_user.id", ondelete="CASCADE"), index=True)
    widgets: Mapped[list[Any]] = mapped_column(JsonObject, default=list)
    created_utc: Mapped[datetime] = mapped_column(UtcDateTime)
    modified_utc: Mapped[datetime] = mapped_column(UtcDateTime)

    shares: Mapped[list[DashboardShare]] = relationship(
        DashboardShare, cascade="all, delete-orphan", lazy="selectin",
        order_by=(DashboardShare.kind, DashboardShare.target))


class SavedViewShare(Model):
    """One party a saved view is shared with, as a dashboard's (``DashboardShare``)."""

    __tablename__ = "saved_view_share"
    __table_args__ = (
        CheckConstraint("kind IN ('user', 'department', 'project', 'role')", name="kind"),
        Index("ix_saved_view_share_kind_target", "kind", "target"),
    )

    view_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("saved_view.id", ondelete="CASCADE"), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    target: Mapped[str] = mapped_column(String(64), primary_key=True)


class SavedView(Model):
    """A list's filter, columns and sort stored under a name by one user (issue 21 §2).

    ``filter`` and ``orderby`` are in the API's notation ($filter, $orderby); ``columns`` the
    field names the list shows, in order."""

    __tablename__ = "saved_view"
    __table_args__ = (Index("ix_saved_view_user_id_eclass", "user_id", "eclass"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(255))
    eclass: Mapped[str] = mapped_column(String(32))
    filter: Mapped[str | None] = mapped_column(Text)
    columns: Mapped[list[Any]] = mapped_column(JsonObject, default=list)
    orderby: Mapped[str | None] = mapped_column(String(255))
    user_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("app_user.id", ondelete="CASCADE"))
    created_utc: Mapped[datetime] = mapped_column(UtcDateTime)
    modified_utc: Mapped[datetime] = mapped_column(UtcDateTime)

    shares: Mapped[list[SavedViewShare]] = relationship(
        SavedViewShare, cascade="all, delete-orphan", lazy="selectin",
        order_by=(SavedViewShare.kind, SavedViewShare.target))


class Notification(Model):
    """Something a user should know about ``subject_id``: raised in the transaction of its
    cause, seen only by ``user_id``."""

    __tablename__ = "notification"
    __table_args__ = (
        CheckConstraint("status IN ('Unread', 'Seen', 'Read')", name="status"),
        Index("ix_notification_user_status", "user_id", "status", "created_utc"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    user_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("app_user.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(32))
    subject_class: Mapped[str | None] = mapped_column(String(32))
    subject_id: Mapped[str | None] = mapped_column(String(64))
    message: Mapped[str] = mapped_column(String(500))
    status: Mapped[str] = mapped_column(String(8), default="Unread")
    created_utc: Mapped[datetime] = mapped_column(UtcDateTime)
    created_by: Mapped[str | None] = mapped_column(String(64))
