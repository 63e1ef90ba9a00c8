"""The status workflow of a class as ``/api/query/status`` answers it (decisions §8).

The workflow itself lives in the data-model registry; this module only presents it. A class
whose workflow has no arrows accepts any listed status, so its transitions list every other
status, exactly as an update would check them.
"""
from __future__ import annotations

from typing import Any

from labapp.model.registry import ClassSpec


def status_info(spec: ClassSpec, current: str | None = None) -> dict[str, Any]:
    """``{statuses, initial, transitions: {from: [to…]}}`` of the class; with ``current``
    also ``current`` and ``allowed`` (the statuses reachable from it now; none when
    ``current`` is not one of the class's statuses)."""
    workflow = spec.workflow
    info: dict[str, Any] = {
        "statuses": list(workflow.statuses),
        "initial": workflow.initial,
        "transitions": {status: list(workflow.allowed_from(status))
                        for status in workflow.statuses},
    }
    if current is not None:
        info["current"] = current
        info["allowed"] = (list(workflow.allowed_from(current))
                           if current in workflow.statuses else [])
    return info
