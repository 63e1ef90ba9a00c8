"""What creating or updating entities of one class also does, beyond the generic batch.

The batch knows no class by name: a feature that owns a class (``users`` owns ``User``)
describes its extra checks and effects as :class:`ClassRules` and the application installs
them once, in :func:`labapp.create_app`. A class without rules gets the no-op base.

Features above the batch that must see a batch as a whole before it is written (storage
places every sample and plate through one check-in rule) install a *planner*: it is called
with the actor and every checked item before any row is written, may complete the items'
values, and returns what to do once they are written (in the same transaction).

Features above the batch that must react to any change (notifications) install a *change
observer* the same way: it is called inside the batch's transaction with the actor and an
:class:`EntityChange`, after the change is written, so what it writes commits or rolls back
with the change.

What is installed belongs to the application (:class:`Hooks`, bound in ``app.extensions``
by :func:`init_app`), not to the process: two applications in one process (tests build
many) never share rules, and requests in other threads read tuples that are replaced
whole, never changed in place.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flask import Flask, current_app

from labapp.access.actor import Actor
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

    def after_update(self, actor: Actor, entity: Entity,
                     changes: dict[str, tuple[Any, Any]]) -> None:
        """Do what follows from changes just applied to ``entity`` by ``actor``."""


WritePlan = Callable[[], None]
BatchPlanner = Callable[[Actor, list[PreparedItem]], WritePlan | None]
_NO_RULES = ClassRules()
HOOKS = "labapp.hooks"  # the app.extensions key of the application's Hooks


@dataclass
class Hooks:
    """What one application installed: the rules of each class, the batch planners and
    the observers of each kind of change (``observers["entity"]``, ``observers["grant"]``)."""

    rules: dict[str, ClassRules] = field(default_factory=dict)
    planners: tuple[BatchPlanner, ...] = ()
    observers: dict[str, tuple[Callable[..., None], ...]] = field(default_factory=dict)


def init_app(app: Flask) -> None:
    """Give ``app`` its empty :class:`Hooks` (``create_app`` then installs them)."""
    app.extensions[HOOKS] = Hooks()


def _hooks() -> Hooks:
    hooks: Hooks = current_app.extensions[HOOKS]
    return hooks


def install(class_name: str, rules: ClassRules) -> None:
    """Make ``rules`` those of ``class_name`` (installing again replaces them)."""
    hooks = _hooks()
    hooks.rules = {**hooks.rules, class_name: rules}


def rules_of(class_name: str) -> ClassRules:
    """The rules of ``class_name``, or the no-op rules."""
    return _hooks().rules.get(class_name, _NO_RULES)


def observe(kind: str, observer: Callable[..., None]) -> None:
    """Call ``observer`` on every change of ``kind`` the owning feature announces (once per
    observer, however often it is installed)."""
    hooks = _hooks()
    known = hooks.observers.get(kind, ())
    if observer not in known:
        hooks.observers = {**hooks.observers, kind: (*known, observer)}


def observers(kind: str) -> tuple[Callable[..., None], ...]:
    """The application's observers of ``kind``, in the order they were installed."""
    return _hooks().observers.get(kind, ())


@dataclass(frozen=True)
class EntityChange:
    """An entity the batch created or changed: ``changes`` maps API field names to
    ``(old, new)`` (old is None for every field of a created entity); ``owner_id`` is its
    ``userID``."""

    eclass: str
    entity_id: str
    name: str
    owner_id: str | None
    changes: dict[str, tuple[Any, Any]]
    created: bool


ChangeObserver = Callable[[Actor, EntityChange], None]
ENTITY_CHANGES = "entity"


def observe_changes(observer: ChangeObserver) -> None:
    """Call ``observer`` after every entity the batch creates or changes (once per observer,
    however often it is installed)."""
    observe(ENTITY_CHANGES, observer)


def announce(actor: Actor, change: EntityChange) -> None:
    """Tell every installed observer about ``change`` (inside the caller's transaction)."""
    for observer in observers(ENTITY_CHANGES):
        observer(actor, change)


def install_planner(planner: BatchPlanner) -> None:
    """Call ``planner`` on every batch before it is written (once per planner, however often
    it is installed)."""
    hooks = _hooks()
    if planner not in hooks.planners:
        hooks.planners = (*hooks.planners, planner)


def plan_batch(actor: Actor, items: list[PreparedItem]) -> list[WritePlan]:
    """Run every installed planner on a checked batch; what each asks to do once the batch
    is written."""
    plans = [planner(actor, items) for planner in _hooks().planners]
    return [plan for plan in plans if plan is not None]
