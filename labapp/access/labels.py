"""The visibility rule of :mod:`labapp.access.visibility` as labels, for the search index.

Every search document carries the labels of its entity (:func:`entity_labels`); a caller
may read a document when it shares a label with :func:`actor_labels`. This is the same rule
as :func:`labapp.access.visibility.readable`: Read on the entity's department or project, or
a directory class for every authenticated caller, or ADMIN. The labels depend only on the
entity, so a grant or a revocation takes effect on the caller's next request, with nothing
to re-index.
"""
from __future__ import annotations

from labapp.access.actor import Actor
from labapp.access.visibility import DIRECTORY_CLASSES

DIRECTORY = "directory"


def department_label(department_id: str) -> str:
    return f"dept:{department_id}"


def project_label(project_id: str) -> str:
    return f"proj:{project_id}"


def entity_labels(eclass: str, department_id: str | None,
                  project_id: str | None) -> frozenset[str]:
    """The access labels of one entity's search document."""
    labels = set()
    if eclass in DIRECTORY_CLASSES:
        labels.add(DIRECTORY)
    if department_id:
        labels.add(department_label(department_id))
    if project_id:
        labels.add(project_label(project_id))
    return frozenset(labels)


def actor_labels(actor: Actor) -> frozenset[str] | None:
    """The labels whose documents ``actor`` may read; None means every document (ADMIN).
    An anonymous caller holds no label."""
    if not actor.is_authenticated:
        return frozenset()
    if actor.is_admin:
        return None
    return frozenset({DIRECTORY}
                     | {department_label(item) for item in actor.read_departments}
                     | {project_label(item) for item in actor.read_projects})
