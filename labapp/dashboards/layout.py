"""Where a dashboard page draws its widgets on the 12-column grid.

The API stores any position and width the grid allows (every size earlier clients could
save), so the page applies two rules when it draws, and the editor the same ones when it
arranges (``static/dashboard-editor.js``):

- **No empty bands**: rows that no widget covers are closed up, so a widget saved far below
  the others (dragged down, or placed by another client) does not leave a screen of empty
  grid above it.
- **Charts at their kind's minimum width** (:func:`labapp.dashboards.schemas.min_columns`):
  a narrower chart is drawn that wide where it covers no other widget (moved left when the
  grid's edge needs it); where it cannot be, it is drawn as its table.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from labapp.dashboards.schemas import GRID_COLUMNS, min_columns


@dataclass(frozen=True)
class Box:
    """A widget's place on the page's grid, in cells counted from 0; ``as_table`` when a
    chart too narrow for its kind is shown as its table."""

    x: int
    y: int
    cols: int
    rows: int
    as_table: bool = False

    def covers(self, other: Box) -> bool:
        """Whether the two boxes share a cell."""
        return (self.x < other.x + other.cols and other.x < self.x + self.cols
                and self.y < other.y + other.rows and other.y < self.y + self.rows)


def closed_up(boxes: Sequence[Box]) -> list[Box]:
    """``boxes`` with every row that none of them covers removed (each box keeps its place
    relative to the others)."""
    covered: set[int] = set()
    for box in boxes:
        covered.update(range(box.y, box.y + box.rows))
    return [replace(box, y=box.y - sum(1 for row in range(box.y) if row not in covered))
            for box in boxes]


def _widened(boxes: list[Box], index: int, least: int) -> Box:
    """Box ``index`` made ``least`` columns wide at the first place from its own leftwards
    where it covers no other box; as a table where it fits nowhere."""
    box = boxes[index]
    others = [other for at, other in enumerate(boxes) if at != index]
    for x in range(min(box.x, GRID_COLUMNS - least), -1, -1):
        wider = replace(box, x=x, cols=least)
        if not any(wider.covers(other) for other in others):
            return wider
    return replace(box, as_table=True)


def drawn(widgets: Sequence[dict[str, Any]]) -> list[Box]:
    """The boxes the page draws ``widgets`` (as the API stores them) in, in their order
    (``as_table`` only means something for a chart)."""
    boxes = []
    for widget in widgets:
        grid = widget["gridster"]
        x = min(grid["x"], GRID_COLUMNS - 1)
        boxes.append(Box(x, grid["y"], min(grid["cols"], GRID_COLUMNS - x), grid["rows"]))
    for index, widget in enumerate(widgets):
        least = min_columns(widget["plugin"]["plugin"])
        if boxes[index].cols < least:
            boxes[index] = _widened(boxes, index, least)
    return closed_up(boxes)
