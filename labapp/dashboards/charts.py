"""Chart geometry for the SVG templates: bars and lines in a fixed view box.

The templates (``templates/dashboards/page.html``) draw what these return; every mark
carries its label and value as text and ``<title>``, and each bar series has its own fill
pattern, so a chart reads without colour. The same numbers go into a table for screen
readers.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

WIDTH, HEIGHT = 480, 220
LEFT, RIGHT, TOP, BOTTOM = 40, 10, 16, 40
PATTERNS = ("solid", "hatch", "dots", "cross", "grid", "diagonal")


@dataclass(frozen=True)
class Mark:
    label: str
    value: int
    x: float
    y: float
    width: float
    height: float
    pattern: str
    capacity: int | None = None


@dataclass(frozen=True)
class Chart:
    """A drawn chart: marks, horizontal gridlines ``(y, value)``, the line's points."""

    marks: list[Mark]
    ticks: list[tuple[float, int]]
    points: str
    width: int = WIDTH
    height: int = HEIGHT
    baseline: float = HEIGHT - BOTTOM
    left: int = LEFT


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


def bars(items: list[dict[str, Any]], *, by_capacity: bool = False) -> Chart:
    """Vertical bars of ``items`` (``label``, ``value``; ``capacity`` for fill bars, which
    are then drawn as a share of the capacity, 0–100 %)."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    maximum = 100 if by_capacity else _scale(max([i["value"] for i in items] + [1]))
    slot = plot_w / max(len(items), 1)
    marks = []
    for n, item in enumerate(items):
        amount = (100 * item["value"] / item["capacity"] if by_capacity and item["capacity"]
                  else item["value"])
        height = plot_h * min(amount, maximum) / maximum
        marks.append(Mark(str(item["label"]), item["value"], LEFT + n * slot + slot * 0.15,
                          HEIGHT - BOTTOM - height, slot * 0.7, height,
                          PATTERNS[n % len(PATTERNS)], item.get("capacity")))
    return Chart(marks, _ticks(maximum), "")


def line(items: list[dict[str, Any]]) -> Chart:
    """A line through ``items`` (``label``, ``value``) with a dot and value at each point."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    maximum = _scale(max([i["value"] for i in items] + [1]))
    step = plot_w / max(len(items) - 1, 1)
    marks = [Mark(str(item["label"]), item["value"], LEFT + n * step,
                  HEIGHT - BOTTOM - plot_h * item["value"] / maximum, 0, 0, "solid")
             for n, item in enumerate(items)]
    points = " ".join(f"{mark.x:.1f},{mark.y:.1f}" for mark in marks)
    return Chart(marks, _ticks(maximum), points)
