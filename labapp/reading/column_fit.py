"""Which columns a list of entities shows at which width: the entity table and the list
widgets of dashboards (saved lists, alerts) keep the columns that fit the box they are drawn
in and leave out the others, lowest value first, rather than be cut off or scroll sideways.

Every column of a list is drawn; each but the row's own (its first column, the name) carries
the width below which it is left out, the sum of the widths of the columns kept before it.
The page hides it there with a CSS container query on the list's box (the ``fit-<rem>``
classes of ``static/app.css``), so the choice follows the box as the window or the widget
changes, with no script and no round trip. Widths are estimates of a column's usual content
in rem; a kept column's long text wraps, breaking a word where it must (the stylesheet lets
every cell but ids, numbers, dates and marks break anywhere), so no kept column is ever
wider than its share.

Value, for a lab member reading a list: the column the list is sorted by, then where an item
is, when it expires or is due, how much is left (the marks "low" and "empty" sit there), its
status, who it is assigned to, then the other fields in their order, and last what
identifies or describes it again (barcode, description, type) and the bookkeeping.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from labapp.model.registry import ClassSpec

SMALLEST, LARGEST = 8, 80
"""The range of widths (rem) the stylesheet has classes for: a column that needs more than
the largest is left out at any width the page's main column (75 rem at most) can have."""
ALWAYS_SHOWN = ("id", "name")
FIRST = ("locationID", "expiryDate", "dueDate", "amount", "status", "assigneeID", "priority")
LAST = ("barcode", "description", "type", "eClass", "version", "createdBy", "createdUtc",
        "modifiedBy", "modifiedUtc")
_WIDTH_OF_NAME = {"id": 6.0, "name": 9.0, "locationID": 9.5, "status": 6.5}
_WIDTH_OF_TYPE = {"ref": 9.0, "date": 6.5, "datetime": 10.0, "int": 6.0, "float": 6.0,
                  "bool": 4.5, "json": 10.0}
_DEFAULT_WIDTH = 9.0


@dataclass(frozen=True)
class Fit:
    """How a list shows one column (headed ``label``): ``hide_below`` the width (rem) of the
    list's box below which the column is left out (None: always shown)."""

    label: str
    hide_below: int | None

    @property
    def css(self) -> str:
        """The column's class on its header and cells ("" when always shown)."""
        return f"fit-{self.hide_below}" if self.hide_below is not None else ""

    @property
    def note_css(self) -> str:
        """The class of the column's name in the list's "not shown" line: shown exactly
        when the column is left out."""
        return f"fit-note-{self.hide_below}"


def _type_of(spec: ClassSpec | None, name: str) -> str:
    field = spec.fields.get(name) if spec is not None else None
    return field.type if field is not None else "str"


def _width(spec: ClassSpec | None, name: str) -> float:
    if name in _WIDTH_OF_NAME:
        return _WIDTH_OF_NAME[name]
    return _WIDTH_OF_TYPE.get(_type_of(spec, name), _DEFAULT_WIDTH)


def _rank(name: str, position: int, sorted_by: str | None) -> tuple[int, int]:
    """Where a column comes in the order columns are kept (lowest first)."""
    if name == sorted_by:
        return -1, 0
    if name in FIRST:
        return 0, FIRST.index(name)
    if name in LAST:
        return 2, LAST.index(name)
    return 1, position


def fits(spec: ClassSpec | None, names: Sequence[str], labels: Sequence[str],
         orderby: str | None = None) -> list[Fit]:
    """The :class:`Fit` of each column ``names`` (labelled ``labels``) of a list of
    ``spec``'s entities sorted by ``orderby`` (``$orderby`` text), in their order. The first
    column (the row's link) and the name are always shown."""
    sorted_by = (orderby or "").split(",")[0].split()[:1]
    kept = [position for position, name in enumerate(names)
            if position == 0 or name in ALWAYS_SHOWN]
    others = sorted((position for position in range(len(names)) if position not in kept),
                    key=lambda position: _rank(names[position], position,
                                               sorted_by[0] if sorted_by else None))
    needed = sum(_width(spec, names[position]) for position in kept)
    hide_below: dict[int, int] = {}
    for position in others:
        needed += _width(spec, names[position])
        hide_below[position] = min(max(math.ceil(needed), SMALLEST), LARGEST)
    return [Fit(labels[position], hide_below.get(position)) for position in range(len(names))]
