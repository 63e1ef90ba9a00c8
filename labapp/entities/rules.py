"""What creating or updating entities of one class also does, beyond the generic batch.

The batch knows no class by name: a feature that owns a class (``users`` owns ``User``)
describes its extra checks and effects as :class:`ClassRules` and the application installs
them once, in :func:`labapp.create_app`. A class without rules gets the no-op base.
"""
from __future__ import annotations

from typing import Any

from labapp.entities.batch import PreparedItem
from labapp.model import Entity


class ClassRules:
    """The hooks the batch calls for one class; every hook does nothing by default."""

    def complete_new_row(self, item: PreparedItem, own: dict[str, Any]) -> None:
        """Check a new item and complete the row of its class table (``own``, by column)."""

    def created_api(self, data: dict[str, Any]) -> None:
        """Add the computed fields a newly created entity shows in the API."""

    def before_update(self, entity: Entity, changes: dict[str, tuple[Any, Any]]) -> None:
        """Check (and complete) the changes about to be applied to ``entity``."""


_NO_RULES = ClassRules()
_INSTALLED: dict[str, ClassRules] = {}


def install(class_name: str, rules: ClassRules) -> None:
    """Make ``rules`` those of ``class_name`` (installing again replaces them)."""
    _INSTALLED[class_name] = rules


def rules_of(class_name: str) -> ClassRules:
    """The rules of ``class_name``, or the no-op rules."""
    return _INSTALLED.get(class_name, _NO_RULES)
