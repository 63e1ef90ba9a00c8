"""Values a lab member must notice, marked in words: an ``expired`` sample, an ``overdue``
request, a sample whose amount is ``low`` or ``empty`` (issue 21;
docs/decisions/list-marks.md).

One rule for every list that shows entities: the entity browser's table and detail pages
(:mod:`labapp.entities.display`) and the saved-list widgets (:mod:`labapp.dashboards.lists`)
all ask :func:`mark_of`, so they mark the same rows.

- ``expired``: an ``expiryDate`` before today (UTC).
- ``overdue``: a ``dueDate`` before today (UTC) while the work is not over
  (:func:`work_over`: a final status, or one whose moves only reopen, as a Completed request).
- ``empty``: a Sample's ``amount`` of 0; ``low``: below its threshold, the entity's own
  ``attributes.lowAmount`` (in the sample's unit) when it has one, else the threshold of its
  unit in the ``LABAPP_LOW_AMOUNT`` setting. A unit the setting does not name has no
  threshold: only ``empty`` applies.

An entity in a final status (a Discarded or Canceled sample) is marked neither expired nor
low nor empty: a tube that is gone calls for nothing.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from typing import Any

from flask import current_app

from labapp.model.registry import ClassSpec
from labapp.model.workflows import Workflow
from labapp.reading.wording import ATTRIBUTES, unit_field

EXPIRED, OVERDUE, LOW, EMPTY = "expired", "overdue", "low", "empty"
EXPIRY_FIELD, DUE_FIELD, AMOUNT_FIELD = "expiryDate", "dueDate", "amount"
STATUS_FIELD = "status"
# The attribute that overrides the unit's threshold for one entity.
LOW_ATTRIBUTE = "lowAmount"
# Classes whose amount is a stock that runs out (a step input's amount is what it used).
STOCK_CLASSES = frozenset({"Sample"})
# Spellings of the micro prefix: the micro sign, the Greek letter mu, and a plain "u".
_MICRO = "\u00b5"
_MICRO_SPELLINGS = ("\u03bc", "u")
_MICRO_UNITS = frozenset({"l", "g", "mol", "m"})


def unit_key(unit: str) -> str:
    """A unit as thresholds are looked up: case ignored, ``uL`` and ``μL`` (Greek mu) as
    ``µl`` (the micro sign)."""
    key = unit.strip().lower()
    for spelling in _MICRO_SPELLINGS:
        if key.startswith(spelling) and key[1:] in _MICRO_UNITS:
            return _MICRO + key[1:]
    return key


def low_amounts() -> dict[str, float]:
    """``unit key → threshold`` of the ``LABAPP_LOW_AMOUNT`` setting."""
    configured: Mapping[str, float] = current_app.config["LABAPP"]["LOW_AMOUNT"]
    return {unit_key(unit): threshold for unit, threshold in configured.items()}


def work_over(workflow: Workflow, status: str | None) -> bool:
    """Whether the work of an entity in ``status`` is over: a final status
    (:meth:`Workflow.is_final`), or one whose every move leads back to an earlier status or
    to one no move leads on from (a Completed request, which may only be reopened)."""
    if status is None or workflow.transitions is None or status not in workflow.statuses:
        return False
    if status == workflow.initial:
        return False
    position = workflow.statuses.index
    return all((target in workflow.statuses and position(target) < position(status))
               or not workflow.allowed_from(target)
               for target in workflow.allowed_from(status))


def inputs(spec: ClassSpec, columns: Sequence[str]) -> list[str]:
    """The fields the marks of ``columns`` read besides the column's own value."""
    needed: list[str] = []
    if any(name in (EXPIRY_FIELD, DUE_FIELD) and name in spec.fields for name in columns):
        needed.append(STATUS_FIELD)
    if AMOUNT_FIELD in columns and _stock(spec):
        needed += [STATUS_FIELD, unit_field(spec, AMOUNT_FIELD) or "", ATTRIBUTES]
    return [name for name in dict.fromkeys(needed) if name and name in spec.fields]


def _stock(spec: ClassSpec) -> bool:
    return spec.name in STOCK_CLASSES and AMOUNT_FIELD in spec.fields


def _day(value: Any) -> date | None:
    """A stored date (or its ISO text) as a date; None for anything else."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).date()
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value[:10])
        except ValueError:
            return None
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _threshold(spec: ClassSpec, row: Mapping[str, Any],
               low: Mapping[str, float]) -> float | None:
    """The amount below which the row's sample is low: its own ``attributes.lowAmount``,
    else its unit's threshold; None when neither is known."""
    attributes = row.get(ATTRIBUTES)
    own = _number(attributes.get(LOW_ATTRIBUTE)) if isinstance(attributes, dict) else None
    if own is not None:
        return own
    unit = row.get(unit_field(spec, AMOUNT_FIELD) or "")
    return low.get(unit_key(unit)) if isinstance(unit, str) and unit else None


def mark_of(spec: ClassSpec, name: str, row: Mapping[str, Any], *, today: date | None = None,
            low: Mapping[str, float] | None = None) -> str | None:
    """The mark of field ``name`` of an entity of ``spec`` whose values (the field's own
    and those :func:`inputs` names) ``row`` holds: ``expired``, ``overdue``, ``empty``,
    ``low`` or None. ``today`` defaults to today in UTC, ``low`` to the thresholds of the
    ``LABAPP_LOW_AMOUNT`` setting."""
    if name not in (EXPIRY_FIELD, DUE_FIELD, AMOUNT_FIELD) or name not in spec.fields:
        return None
    value, status = row.get(name), row.get(STATUS_FIELD)
    if value is None:
        return None
    if name == DUE_FIELD:
        due = _day(value)
        over = work_over(spec.workflow, status)
        return OVERDUE if due is not None and due < _today(today) and not over else None
    if isinstance(status, str) and spec.workflow.is_final(status):
        return None
    if name == EXPIRY_FIELD:
        expiry = _day(value)
        return EXPIRED if expiry is not None and expiry < _today(today) else None
    amount = _number(value)
    if not _stock(spec) or amount is None:
        return None
    if amount <= 0:
        return EMPTY
    thresholds = (low_amounts() if low is None
                  else {unit_key(unit): threshold for unit, threshold in low.items()})
    threshold = _threshold(spec, row, thresholds)
    return LOW if threshold is not None and amount < threshold else None


def _today(today: date | None) -> date:
    return today if today is not None else datetime.now(UTC).date()
