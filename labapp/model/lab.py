"""Lab work: experiments, steps and their inputs, samples, plates, fermentations, requests."""
from __future__ import annotations

from datetime import date, datetime

from sqlalchemy import Date, Float, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from labapp.model.base import Entity, ref_column, subclass_id
from labapp.model.types import UtcDateTime


class Experiment(Entity):
    __tablename__ = "experiment"

    id: Mapped[str] = subclass_id()
    start_date: Mapped[date | None] = mapped_column(Date)
    end_date: Mapped[date | None] = mapped_column(Date)


class Step(Entity):
    __tablename__ = "step"

    id: Mapped[str] = subclass_id()
    experiment_id: Mapped[str | None] = ref_column("Experiment", "experiment")
    step_index: Mapped[int | None] = mapped_column(Integer)
    start_date: Mapped[date | None] = mapped_column(Date)
    end_date: Mapped[date | None] = mapped_column(Date)


class StepInput(Entity):
    """One input of a step: an entity of any class, with amount and position."""

    __tablename__ = "step_input"
    # Field suggestions walk a column's values along (column, id): labapp/query/suggest.py.
    __table_args__ = (Index("ix_step_input_unit", "unit", "id"),)

    id: Mapped[str] = subclass_id()
    step_id: Mapped[str | None] = ref_column("Step", "step")
    input_class: Mapped[str | None] = mapped_column(String(32))
    input_id: Mapped[str | None] = ref_column("*")
    input_position: Mapped[int | None] = mapped_column(Integer)
    amount: Mapped[float | None] = mapped_column(Float, info={"minimum": 0})
    unit: Mapped[str | None] = mapped_column(String(32))


class Plate(Entity):
    __tablename__ = "plate"

    id: Mapped[str] = subclass_id()
    experiment_id: Mapped[str | None] = ref_column("Experiment", "experiment")
    step_id: Mapped[str | None] = ref_column("Step", "step")
    rows: Mapped[int | None] = mapped_column(Integer, default=8)
    columns: Mapped[int | None] = mapped_column(Integer, default=12)
    location_id: Mapped[str | None] = ref_column("Location", "location")
    position: Mapped[str | None] = mapped_column(String(32))


class Sample(Entity):
    __tablename__ = "sample"
    # Storage counts the samples of a location that are not on a plate: with plate_id in
    # the location index the count never reads a sample row.
    __table_args__ = (Index("ix_sample_unit", "unit", "id"),
                      Index("ix_sample_concentration_unit", "concentration_unit", "id"),
                      Index("ix_sample_location_id_plate_id", "location_id", "plate_id"))

    id: Mapped[str] = subclass_id()
    parent_id: Mapped[str | None] = ref_column("Sample", "sample")
    experiment_id: Mapped[str | None] = ref_column("Experiment", "experiment")
    step_id: Mapped[str | None] = ref_column("Step", "step")
    origin_id: Mapped[str | None] = ref_column("*")
    plate_id: Mapped[str | None] = ref_column("Plate", "plate")
    well: Mapped[str | None] = mapped_column(String(8))
    location_id: Mapped[str | None] = ref_column("Location", "location", index=False)
    position: Mapped[str | None] = mapped_column(String(32))
    amount: Mapped[float | None] = mapped_column(Float, info={"minimum": 0})
    unit: Mapped[str | None] = mapped_column(String(32))
    concentration: Mapped[float | None] = mapped_column(Float)
    concentration_unit: Mapped[str | None] = mapped_column(String(32))
    date_taken: Mapped[date | None] = mapped_column(Date)
    expiry_date: Mapped[date | None] = mapped_column(Date)


class Fermentation(Entity):
    __tablename__ = "fermentation"

    id: Mapped[str] = subclass_id()
    experiment_id: Mapped[str | None] = ref_column("Experiment", "experiment")
    origin_id: Mapped[str | None] = ref_column("Step", "step")
    organism: Mapped[str | None] = mapped_column(String(255))
    start_time: Mapped[datetime | None] = mapped_column(UtcDateTime)
    end_time: Mapped[datetime | None] = mapped_column(UtcDateTime)
    working_volume: Mapped[float | None] = mapped_column(Float)


class Request(Entity):
    """A work request assigned to a user, about any subject entity."""

    __tablename__ = "request"

    id: Mapped[str] = subclass_id()
    assignee_id: Mapped[str | None] = ref_column("User", "app_user")
    due_date: Mapped[date | None] = mapped_column(Date)
    priority: Mapped[str | None] = mapped_column(String(16), default="Normal",
                                                 info={"choices": ("Low", "Normal", "High",
                                                                   "Urgent")})
    subject_class: Mapped[str | None] = mapped_column(String(32))
    subject_id: Mapped[str | None] = ref_column("*")
