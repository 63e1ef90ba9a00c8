"""Where the page draws widgets (issue 32 §5): rows no widget covers are closed up, and a
chart narrower than its kind is drawn at its minimum where that covers no other widget,
else as its table."""
from __future__ import annotations

from typing import Any

from labapp.dashboards.layout import Box, closed_up, drawn
from tests.dashboards.conftest import widget


def chart(x: int, y: int, cols: int) -> dict[str, Any]:
    return widget("status-counts", {"eClass": "Sample"}, x=x, y=y, cols=cols)


def note(x: int, y: int, cols: int, rows: int = 4) -> dict[str, Any]:
    return widget("note", {"markdown": "n"}, x=x, y=y, cols=cols, rows=rows)


def test_rows_no_widget_covers_are_closed_up() -> None:
    boxes = closed_up([Box(0, 0, 6, 4), Box(6, 2, 6, 4), Box(0, 20, 12, 2), Box(3, 40, 3, 1)])
    assert [box.y for box in boxes] == [0, 2, 6, 8]
    assert closed_up([Box(0, 3, 12, 2)]) == [Box(0, 0, 12, 2)]
    assert closed_up([]) == []


def test_a_narrow_chart_is_widened_where_it_covers_nothing_else_shown_as_a_table() -> None:
    alone = drawn([chart(9, 0, 2)])
    assert alone == [Box(6, 0, 6, 4)]
    beside = drawn([note(0, 0, 3), chart(9, 0, 3)])
    assert beside[1] == Box(6, 0, 6, 4)
    between = drawn([note(0, 0, 4), chart(4, 0, 2), note(10, 0, 2)])
    assert between[1] == Box(4, 0, 6, 4)
    boxed_in = drawn([chart(0, 0, 3), note(3, 0, 9)])
    assert boxed_in[0] == Box(0, 0, 3, 4, as_table=True)
    assert drawn([note(0, 0, 1), chart(1, 5, 6)]) == [Box(0, 0, 1, 4), Box(1, 4, 6, 4)]


def test_positions_outside_the_grid_are_kept_inside_it() -> None:
    assert drawn([note(11, 0, 5)]) == [Box(11, 0, 1, 4)]
