"""Storage locations: sites, rooms, freezers, racks, boxes..."""
from __future__ import annotations

from sqlalchemy import Float, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from labapp.model.base import Entity, ref_column, subclass_id

LOCATION_TYPES = ("Site", "Room", "Freezer", "Fridge", "Shelf", "Rack", "Box", "Cage", "Other")


class Location(Entity):
    """A place that holds samples and plates; ``capacity`` None means unlimited."""

    __tablename__ = "location"

    id: Mapped[str] = subclass_id()
    parent_id: Mapped[str | None] = ref_column("Location", "location")
    location_type: Mapped[str | None] = mapped_column(String(16), default="Other",
                                                      info={"choices": LOCATION_TYPES})
    capacity: Mapped[int | None] = mapped_column(Integer)
    rows: Mapped[int | None] = mapped_column(Integer)
    columns: Mapped[int | None] = mapped_column(Integer)
    temperature: Mapped[float | None] = mapped_column(Float)
    position: Mapped[str | None] = mapped_column(String(32))
    hierarchy: Mapped[str | None] = mapped_column(String(1024), info={"readOnly": True})
