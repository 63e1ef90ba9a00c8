"""Updating an object from new values: the allow-list, the assignment, and the
``{name: (old, new)}`` diff that becomes the audit record (as Indico's update helper does).

Values are keyed by the names callers use (API names); ``attributes`` maps each name the
caller may change to the object's attribute, and is the allow-list.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Changes = dict[str, tuple[Any, Any]]


def diff(target: object, values: Mapping[str, Any], attributes: Mapping[str, str]) -> Changes:
    """``{name: (old, new)}`` for each of ``values`` that differs from ``target``; nothing is
    set. Raises :class:`ValueError` naming every name outside ``attributes``."""
    unknown = sorted(set(values) - set(attributes))
    if unknown:
        raise ValueError(f"not editable on {type(target).__name__}: {', '.join(unknown)}")
    found: Changes = {}
    for name, value in values.items():
        old = getattr(target, attributes[name])
        if old != value:
            found[name] = (old, value)
    return found


def assign(target: object, changes: Changes, attributes: Mapping[str, str]) -> None:
    """Set the new value of each of ``changes`` on ``target``."""
    for name, (_, new) in changes.items():
        setattr(target, attributes[name], new)


def update(target: object, values: Mapping[str, Any], attributes: Mapping[str, str]) -> Changes:
    """Set the values that differ (see :func:`diff`) and return what changed."""
    changes = diff(target, values, attributes)
    assign(target, changes, attributes)
    return changes
