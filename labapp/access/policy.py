"""What an actor may do beyond the visibility rule: class-level creation rights."""
from __future__ import annotations

from labapp.access.actor import ADMIN, DATA_MANAGER, Actor

# Classes whose creation needs a role rather than write access to a department or project.
CLASS_CREATORS: dict[str, tuple[str, ...]] = {
    "User": (ADMIN,),
    "Department": (ADMIN, DATA_MANAGER),
    "Project": (ADMIN, DATA_MANAGER),
}


def may_create_class(actor: Actor, class_name: str) -> bool:
    """Whether the actor may create entities of ``class_name`` at all."""
    required = CLASS_CREATORS.get(class_name)
    return actor.is_authenticated and (required is None or actor.holds_any(required))
