"""The status workflows of the entity classes: statuses, allowed moves, which are final."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Workflow:
    """The statuses of a class (initial first) and the allowed moves; None = any move."""

    statuses: tuple[str, ...]
    transitions: Mapping[str, tuple[str, ...]] | None = None

    @property
    def initial(self) -> str:
        return self.statuses[0]

    def allowed_from(self, current: str) -> tuple[str, ...]:
        """Statuses reachable from ``current`` (every other status when moves are free)."""
        if self.transitions is None:
            return tuple(status for status in self.statuses if status != current)
        return self.transitions.get(current, ())

    def can_move(self, current: str, target: str) -> bool:
        return current == target or target in self.allowed_from(current)

    def is_final(self, status: str) -> bool:
        """Whether the work of an entity in ``status`` is over: no move leads on from it, or
        only back to the initial status (reopening) or to a status no move leads on from
        (a Sample's ``Discarded`` and ``Canceled``, a Request's ``Rejected`` and
        ``Canceled``). None is when any move is allowed. Pages ask before such a move, and
        before storing such an item."""
        if self.transitions is None or status == self.initial:
            return False
        return all(target == self.initial or not self.allowed_from(target)
                   for target in self.allowed_from(status))

    @property
    def final_statuses(self) -> frozenset[str]:
        """The statuses :meth:`is_final` holds for."""
        return frozenset(status for status in self.statuses if self.is_final(status))


def _workflow(active: str) -> Workflow:
    return Workflow(
        ("Initial", active, "Completed", "Canceled"),
        {"Initial": (active, "Canceled"),
         active: ("Completed", "Canceled", "Initial"),
         "Completed": (active,),
         "Canceled": ("Initial",)})


WORKFLOW = _workflow("InProgress")
PROJECT_WORKFLOW = _workflow("Active")
MATERIAL_WORKFLOW = Workflow(
    WORKFLOW.statuses + ("Discarded",),
    {**{status: moves + ("Discarded",)
        for status, moves in (WORKFLOW.transitions or {}).items()},
     "Discarded": ()})
REQUEST_WORKFLOW = Workflow(
    ("Initial", "InProgress", "Completed", "Rejected", "Canceled"),
    {"Initial": ("InProgress", "Rejected", "Canceled"),
     "InProgress": ("Completed", "Canceled"),
     "Completed": ("InProgress",),
     "Rejected": ("Initial",),
     "Canceled": ("Initial",)})
ACTIVE_INACTIVE = Workflow(("Active", "Inactive"))
INITIAL_ONLY = Workflow(("Initial",))
