"""Organisation: departments, projects, users and their roles."""
from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sqlalchemy import BigInteger, Boolean, Date, ForeignKey, Index, String, text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from labapp.db import Model
from labapp.model.base import Entity, ref_column, subclass_id
from labapp.model.types import JsonObject, UtcDateTime


class Department(Entity):
    """A department; its ``department_id`` is its own id."""

    __tablename__ = "department"

    id: Mapped[str] = subclass_id()
    parent_id: Mapped[str | None] = ref_column("Department", "department")


class Project(Entity):
    """A project; its ``project_id`` is its own id."""

    __tablename__ = "project"

    id: Mapped[str] = subclass_id()
    start_date: Mapped[date | None] = mapped_column(Date)
    end_date: Mapped[date | None] = mapped_column(Date)


class ProjectSetting(Model):
    """A named JSON object of settings of a project (``/api/project/{id}/settings/{name}``)."""

    __tablename__ = "project_setting"

    project_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("project.id", ondelete="CASCADE"), primary_key=True)
    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    value: Mapped[dict[str, Any]] = mapped_column(JsonObject, default=dict)
    modified_by: Mapped[str] = mapped_column(String(64))
    modified_utc: Mapped[datetime] = mapped_column(UtcDateTime)


class Role(Model):
    """A role; roles are the scopes endpoints require (ADMIN, DATA_MANAGER, ...)."""

    __tablename__ = "role"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    description: Mapped[str] = mapped_column(String(255), default="")


class UserRole(Model):
    """A role held by a user."""

    __tablename__ = "user_role"

    user_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("app_user.id", ondelete="CASCADE"), primary_key=True)
    role_name: Mapped[str] = mapped_column(
        String(64), ForeignKey("role.name", ondelete="CASCADE"), primary_key=True)


class User(Entity):
    """A user; ``id`` is the username and ``department_id`` the home department."""

    __tablename__ = "app_user"
    __table_args__ = (Index("ix_app_user_external", "auth_source", "external_id", unique=True),)

    id: Mapped[str] = subclass_id()
    email: Mapped[str | None] = mapped_column(String(255))
    initials: Mapped[str | None] = mapped_column(String(16))
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)
    last_login_utc: Mapped[datetime | None] = mapped_column(UtcDateTime,
                                                           info={"readOnly": True})
    password_hash: Mapped[str | None] = mapped_column(String(255), info={"hidden": True})
    # Where the user signs in (decisions §19): ``local`` (a password kept here), ``ldap`` or
    # ``oidc:<provider name>``; set by sign-in and the directory sync, never by the API.
    auth_source: Mapped[str] = mapped_column(String(80), default="local",
                                             server_default="local", info={"readOnly": True})
    # The directory's own name for the user (an LDAP DN, an OIDC ``sub``), unique per source.
    external_id: Mapped[str | None] = mapped_column(String(512), info={"hidden": True})
    settings: Mapped[dict[str, Any]] = mapped_column(JsonObject, default=dict,
                                                     info={"hidden": True})
    # Set to a never-used number by the database's triggers when the user is inserted and on
    # any change of their roles, grants, account or home department (migration
    # 7b1d3f5a9c20); labapp.auth.actors keys its memory on it.
    actor_version: Mapped[int] = mapped_column(BigInteger, server_default=text("0"),
                                               info={"hidden": True, "local": True})

    role_links: Mapped[list[UserRole]] = relationship(
        UserRole, cascade="all, delete-orphan", lazy="selectin")

    @property
    def roles(self) -> list[str]:
        """Names of the roles the user holds, sorted."""
        return sorted(link.role_name for link in self.role_links)
