"""The one visibility rule (decisions §5), as SQL predicates and as answers for one entity.

An entity is readable when the actor is ADMIN, or has Read on its department or on its
project; writable with Write on either (Write implies Read). ``User`` and ``Department``
entities are the directory: every authenticated actor reads them, only ADMIN writes them.
Every read path filters with :func:`readable`; every write checks :func:`writable`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, bindparam, false, or_, true

from labapp.access.actor import Actor
from labapp.errors import Forbidden, NotFound
from labapp.model import Entity

DIRECTORY_CLASSES = ("User", "Department")
READ, WRITE, NONE = "Read", "Write", "None"


def _grant_predicate(entity: Any, departments: Any, projects: Any) -> ColumnElement[bool]:
    """Rows of ``entity`` in one of ``departments`` or ``projects``: each the ids or an
    expanding parameter (:class:`ReadRule`); None means no such term."""
    terms = []
    if departments is not None:
        terms.append(entity.department_id.in_(departments))
    if projects is not None:
        terms.append(entity.project_id.in_(projects))
    return or_(*terms) if terms else false()


def _ids(ids: frozenset[str]) -> list[str] | None:
    return sorted(ids) or None


def readable(actor: Actor, entity: Any = Entity) -> ColumnElement[bool]:
    """SQL predicate: the rows of ``entity`` (the class or an alias) the actor may read."""
    if not actor.is_authenticated:
        return false()
    if actor.is_admin:
        return true()
    return or_(entity.eclass.in_(DIRECTORY_CLASSES),
               _grant_predicate(entity, _ids(actor.read_departments),
                                _ids(actor.read_projects)))


READ_DEPARTMENTS, READ_PROJECTS = "read_departments", "read_projects"


@dataclass(frozen=True)
class ReadRule:
    """:func:`readable` with the actor's grants as parameters (``read_departments``,
    ``read_projects``: :meth:`parameters`), so that a statement built once serves every
    actor of the same shape — signed in or not, ADMIN or not, with department grants or
    not, with project grants or not — and a request skips building and keying it."""

    authenticated: bool
    admin: bool
    departments: bool
    projects: bool

    @classmethod
    def of(cls, actor: Actor) -> ReadRule:
        return cls(actor.is_authenticated, actor.is_authenticated and actor.is_admin,
                   bool(actor.read_departments), bool(actor.read_projects))

    def predicate(self, entity: Any = Entity) -> ColumnElement[bool]:
        """The same predicate as :func:`readable` for an actor of this shape (one per
        statement: the parameters have fixed names)."""
        if not self.authenticated:
            return false()
        if self.admin:
            return true()
        return or_(entity.eclass.in_(DIRECTORY_CLASSES), _grant_predicate(
            entity, bindparam(READ_DEPARTMENTS, expanding=True) if self.departments else None,
            bindparam(READ_PROJECTS, expanding=True) if self.projects else None))

    @staticmethod
    def parameters(actor: Actor) -> dict[str, list[str]]:
        """The parameters of :meth:`predicate` for ``actor``."""
        return {READ_DEPARTMENTS: sorted(actor.read_departments),
                READ_PROJECTS: sorted(actor.read_projects)}


def readable_through(actor: Actor, department: Any, project: Any) -> ColumnElement[bool]:
    """SQL predicate: the actor's grants reach rows whose department and project are the
    columns ``department`` and ``project`` (a row's earlier place, for instance); the
    directory classes and ADMIN, which need no grant, are :func:`readable`'s."""
    if not actor.is_authenticated:
        return false()
    if actor.is_admin:
        return true()
    terms = []
    if actor.read_departments:
        terms.append(department.in_(sorted(actor.read_departments)))
    if actor.read_projects:
        terms.append(project.in_(sorted(actor.read_projects)))
    return or_(*terms) if terms else false()


def writable(actor: Actor, entity: Any = Entity) -> ColumnElement[bool]:
    """SQL predicate: the rows of ``entity`` the actor may change."""
    if not actor.is_authenticated:
        return false()
    if actor.is_admin:
        return true()
    predicate: ColumnElement[bool] = (
        entity.eclass.not_in(DIRECTORY_CLASSES)
        & _grant_predicate(entity, _ids(actor.write_departments),
                           _ids(actor.write_projects)))
    return predicate


def access_type(actor: Actor, eclass: str, department_id: str | None,
                project_id: str | None) -> str:
    """``Write``, ``Read`` or ``None`` for one entity, by the same rule as the predicates."""
    if not actor.is_authenticated:
        return NONE
    if actor.is_admin:
        return WRITE
    if eclass in DIRECTORY_CLASSES:
        return READ
    if department_id in actor.write_departments or project_id in actor.write_projects:
        return WRITE
    if department_id in actor.read_departments or project_id in actor.read_projects:
        return READ
    return NONE


def require_writable(actor: Actor, eclass: str, department_id: str | None,
                     project_id: str | None, *, hidden: str, read_only: str,
                     item: int | None = None) -> None:
    """Let the actor change one entity: :class:`NotFound` (``hidden``) when they cannot see
    it, so a hidden entity is answered like a missing one, and :class:`Forbidden`
    (``read_only``) when they may only read it; both about request item ``item`` if given."""
    access = access_type(actor, eclass, department_id, project_id)
    if access == NONE:
        raise NotFound(hidden, item=item)
    if access != WRITE:
        raise Forbidden(read_only, item=item)


def may_write_into(actor: Actor, department_id: str | None, project_id: str | None) -> bool:
    """Whether the actor may create an entity that will belong to this department/project."""
    if actor.is_admin:
        return True
    return (department_id in actor.write_departments) or (project_id in actor.write_projects)
