"""Chart geometry for the SVG templates: bars and lines in a view box sized to the widget.

The view box is as wide as the widget is on screen: the page sends the width it measured
(``?width=``, CSS pixels), so a unit of the view box is a pixel and the text, drawn at
:data:`FONT_SIZE` units, is 12 px whatever the window; without a measured width it is the
widget's column span (:data:`COLUMN_WIDTH` units a column). The axis shows only the labels
that fit that width. A chart narrower than :data:`MIN_WIDTH`, or whose bars are too narrow to
name, is ``as_table``: the page shows its table instead. The template
(``templates/dashboards/chart.html``) draws what these return; every mark carries its
label and value in a ``<title>``, each bar series has its own fill pattern, so a chart
reads without colour, and the same numbers go into a table for screen readers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date
from typing import Any

HEIGHT = 220
LEFT, RIGHT, TOP, BOTTOM = 40, 12, 20, 40
COLUMN_WIDTH = 80
MIN_WIDTH = 280  # narrower, a chart's 12 px labels no longer fit: its table is shown
MAX_WIDTH = 4000
FONT_SIZE = 12
CHAR_WIDTH = FONT_SIZE * 0.6
LABEL_GAP = FONT_SIZE
MIN_LABEL = 3  # characters of a bar's label that must fit under it ("Bo…")
PATTERNS = ("solid", "hatch", "dots", "cross", "grid", "diagonal")


@dataclass(frozen=True)
class Mark:
    """One bar or point. ``axis_label`` is its text under the axis ("" when thinned out);
    ``show_value`` says whether its value is written beside it; ``partial`` marks the
    current, unfinished week of a line."""

    label: str
    value: int
    x: float
    y: float
    width: float
    height: float
    pattern: str
    capacity: int | None = None
    axis_label: str = ""
    show_value: bool = True
    partial: bool = False


@dataclass(frozen=True)
class Chart:
    """A drawn chart (``kind`` "bars" or "line"): marks, horizontal gridlines ``(y, value)``,
    the line's points (the complete weeks, then the segment into the partial last one) and a
    one-sentence summary for the ``aria-label``; ``as_table`` when it is too narrow to draw
    legibly (the page shows its table instead)."""

    kind: str
    marks: list[Mark]
    ticks: list[tuple[float, int]]
    points: str
    width: int
    summary: str
    partial_points: str = ""
    height: int = HEIGHT
    baseline: float = HEIGHT - BOTTOM
    left: int = LEFT
    font_size: int = FONT_SIZE
    as_table: bool = False


def width_for(columns: int) -> int:
    """The view-box width of a chart in a widget ``columns`` grid columns wide (1–12), when
    the page did not say how wide the widget is."""
    return COLUMN_WIDTH * max(1, min(columns, 12))


def _view_width(columns: int, width: int | None) -> int:
    """The view box's width: the measured ``width`` (kept within reason) or the span's."""
    if width is None:
        return width_for(columns)
    return max(1, min(width, MAX_WIDTH))


def labels_that_fit(plot_width: float, longest: int) -> int:
    """How many axis labels of ``longest`` characters fit side by side in ``plot_width``."""
    return max(1, int(plot_width // (longest * CHAR_WIDTH + LABEL_GAP)))


def thinned(count: int, fits: int) -> set[int]:
    """Indexes of the ``count`` marks that get an axis label when ``fits`` labels fit: every
    k-th counted back from the last (the newest is always labelled), evenly spaced."""
    if count <= 0:
        return set()
    step = math.ceil(count / max(fits, 1))
    return set(range(count - 1, -1, -step))


def week_label(iso_day: str) -> str:
    """A week's axis label: its Monday as day and month ("3 Nov")."""
    day = date.fromisoformat(iso_day)
    return f"{day.day} {day:%b}"


def _scale(top_value: int) -> int:
    """A round maximum for the axis (1, 2, 5 × 10ⁿ) at or above ``top_value``."""
    step = 1
    while True:
        for factor in (1, 2, 5):
            if step * factor >= top_value:
                return step * factor
        step *= 10


def _ticks(maximum: int) -> list[tuple[float, int]]:
    plot = HEIGHT - TOP - BOTTOM
    return [(HEIGHT - BOTTOM - plot * i / 4, round(maximum * i / 4)) for i in range(5)]


def _shortened(text: str, room: float) -> str:
    """``text`` cut with an ellipsis to the characters that fit in ``room`` units."""
    chars = max(1, int(room // CHAR_WIDTH))
    return text if len(text) <= chars else text[:max(chars - 1, 1)] + "…"


def bars(items: list[dict[str, Any]], *, columns: int = 6, width: int | None = None,
         by_capacity: bool = False) -> Chart:
    """Vertical bars of ``items`` (``label``, ``value``; ``capacity`` for fill bars, which
    are then drawn as a share of the capacity, 0–100 %), in a widget ``columns`` wide (or
    ``width`` pixels, when measured). Labels are shortened to their slot; values are written
    on every bar. Bars too narrow for three characters of their label make it ``as_table``."""
    width = _view_width(columns, width)
    plot_w, plot_h = width - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    maximum = 100 if by_capacity else _scale(max([i["value"] for i in items] + [1]))
    slot = plot_w / max(len(items), 1)
    marks = []
    for n, item in enumerate(items):
        amount = (100 * item["value"] / item["capacity"] if by_capacity and item["capacity"]
                  else item["value"])
        height = plot_h * min(amount, maximum) / maximum
        marks.append(Mark(str(item["label"]), item["value"], LEFT + n * slot + slot * 0.15,
                          HEIGHT - BOTTOM - height, slot * 0.7, height,
                          PATTERNS[n % len(PATTERNS)], item.get("capacity"),
                          axis_label=_shortened(str(item["label"]), slot - LABEL_GAP)))
    summary = "Bar chart: " + ", ".join(
        f"{mark.label} {mark.value}" + (f" of {mark.capacity}" if mark.capacity else "")
        for mark in marks) if marks else "Bar chart: nothing to show"
    legible = width >= MIN_WIDTH and slot >= MIN_LABEL * CHAR_WIDTH + LABEL_GAP
    return Chart("bars", marks, _ticks(maximum), "", width, summary, as_table=not legible)


def line(items: list[dict[str, Any]], *, columns: int = 6, width: int | None = None) -> Chart:
    """A line through the weeks of ``items`` (``label`` the week's Monday as ISO date,
    ``value``), in a widget ``columns`` wide (or ``width`` pixels, when measured); the last
    week is the current, unfinished one and is drawn apart (dashed). Only the axis labels
    that fit are drawn, and only non-zero values are written, none when more of them than
    fit."""
    width = _view_width(columns, width)
    plot_w, plot_h = width - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    maximum = _scale(max([i["value"] for i in items] + [1]))
    step = plot_w / max(len(items) - 1, 1)
    labels = [week_label(str(item["label"])) for item in items]
    fits = labels_that_fit(plot_w, max((len(text) for text in labels), default=1))
    labelled = thinned(len(items), fits)
    written = sum(1 for item in items if item["value"]) <= fits
    marks = [Mark(str(item["label"]), item["value"], LEFT + n * step,
                  HEIGHT - BOTTOM - plot_h * item["value"] / maximum, 0, 0, "solid",
                  axis_label=labels[n] if n in labelled else "",
                  show_value=written and item["value"] > 0, partial=n == len(items) - 1)
             for n, item in enumerate(items)]
    coordinates = [f"{mark.x:.1f},{mark.y:.1f}" for mark in marks]
    return Chart("line", marks, _ticks(maximum), " ".join(coordinates[:-1]), width,
                 _line_summary(marks, labels), partial_points=" ".join(coordinates[-2:]),
                 as_table=width < MIN_WIDTH)


def _line_summary(marks: list[Mark], labels: list[str]) -> str:
    if not marks:
        return "Line chart: nothing to show"
    total = sum(mark.value for mark in marks)
    top = max(marks, key=lambda mark: mark.value)
    return (f"Line chart of {len(marks)} weeks from {labels[0]} to {labels[-1]}: "
            f"{total} in all, at most {top.value} (week of {labels[marks.index(top)]}); "
            f"this week so far {marks[-1].value}")
