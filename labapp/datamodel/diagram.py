"""A class's statuses and their transitions as an SVG diagram, laid out on the server.

The statuses stand in a row, initial first; a move to a later status is an arc above the
row, a move back an arc below it, each with an arrowhead and a ``<title>`` naming it. A
class whose statuses accept any move (no transitions) shows the row alone.
"""
from __future__ import annotations

from dataclasses import dataclass

from labapp.model.workflows import Workflow

BOX_WIDTH = 112
BOX_HEIGHT = 32
GAP = 40
MARGIN = 12
ARC_STEP = 18


@dataclass(frozen=True)
class Box:
    status: str
    x: int
    y: int
    initial: bool


@dataclass(frozen=True)
class Arrow:
    source: str
    target: str
    path: str
    forward: bool


@dataclass(frozen=True)
class Diagram:
    width: int
    height: int
    boxes: tuple[Box, ...]
    arrows: tuple[Arrow, ...]
    free: bool
    box_width: int = BOX_WIDTH
    box_height: int = BOX_HEIGHT


def diagram(workflow: Workflow) -> Diagram:
    """The layout of ``workflow``'s diagram."""
    statuses = workflow.statuses
    transitions = workflow.transitions or {}
    spans = [abs(statuses.index(b) - statuses.index(a))
             for a, moves in transitions.items() for b in moves]
    lift = MARGIN + ARC_STEP * (max(spans, default=0) + 1)
    row_y = lift
    centres = {status: MARGIN + index * (BOX_WIDTH + GAP) + BOX_WIDTH // 2
               for index, status in enumerate(statuses)}
    boxes = tuple(Box(status, centres[status] - BOX_WIDTH // 2, row_y, index == 0)
                  for index, status in enumerate(statuses))
    arrows = []
    for source, moves in transitions.items():
        for target in moves:
            forward = statuses.index(target) > statuses.index(source)
            span = abs(statuses.index(target) - statuses.index(source))
            start, end = centres[source], centres[target]
            shift = 10 if forward else -10
            if forward:
                y0 = row_y
                peak = row_y - ARC_STEP * (span + 1)
            else:
                y0 = row_y + BOX_HEIGHT
                peak = row_y + BOX_HEIGHT + ARC_STEP * (span + 1)
            path = (f"M {start + shift} {y0} C {start + shift} {peak}, "
                    f"{end - shift} {peak}, {end - shift} {y0}")
            arrows.append(Arrow(source, target, path, forward))
    width = MARGIN * 2 + len(statuses) * BOX_WIDTH + (len(statuses) - 1) * GAP
    return Diagram(width, row_y + BOX_HEIGHT + lift, boxes, tuple(arrows),
                   workflow.transitions is None)
