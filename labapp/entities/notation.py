"""Functional notation in a batch of entities (decisions §6), resolved before anything is written.

- ``#name`` as an id declares a variable: the item gets a generated id, and ``#name`` in a
  reference field, ``name`` or ``barcode`` of any item of the batch means that id.
- ``#name.prop`` means the value of ``prop`` of the item that declares ``#name`` (items may
  refer to variables declared later in the batch).
- ``!seq`` as an id generates it from sequence ``seq``; ``#name!seq`` does both. A class name
  stands for its default sequence (``#s!Sample``).
- ``!seq`` alone in ``name`` or ``barcode`` is a number drawn from that sequence; in a
  reference field it is an error.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from labapp.errors import InvalidInput
from labapp.model.registry import ClassSpec

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_SEQUENCE = r"[A-Za-z0-9_.\-]+"
ID_PATTERN = re.compile(rf"^(?:#(?P<var>{_NAME}))?(?:!(?P<seq>{_SEQUENCE}))?$")
REFERENCE_PATTERN = re.compile(rf"^#(?P<var>{_NAME})(?:\.(?P<prop>{_NAME}))?$")
SEQUENCE_VALUE = re.compile(rf"^!(?P<seq>{_SEQUENCE})$")
DRAWABLE_FIELDS = ("name", "barcode")


class NotationError(InvalidInput):
    code = "invalid_notation"


@dataclass
class BatchItem:
    """One item of a batch after its id has been decided."""

    index: int
    spec: ClassSpec
    id: str
    values: dict[str, Any]
    variable: str | None = None
    generated: bool = False
    state: str = field(default="pending", repr=False)  # pending → resolving → done


def item_error(index: int, field_name: str, message: str,
               error: type[InvalidInput] = NotationError) -> InvalidInput:
    """An error of one batch item, naming the item's index and field."""
    return error(f"entities[{index}].{field_name}: {message}",
                 errors=[{"field": f"entities.{index}.{field_name}", "message": message}],
                 item=index)


def decide_id(index: int, spec: ClassSpec, raw_id: Any, draw: Callable[[str], str],
              notation: bool = True) -> tuple[str, str | None, bool]:
    """The id of an item, the variable it declares, and whether the id was generated.

    ``draw(sequence_or_class)`` returns the next formatted value of a sequence. Without
    ``notation`` a given id is always literal.
    """
    if raw_id is None:
        if spec.prefix is None:
            raise item_error(index, "id", f"an id is required for class {spec.name}")
        return _drawn(draw, spec.name, index, "id"), None, True
    if not isinstance(raw_id, str) or not raw_id:
        raise item_error(index, "id", "expected a non-empty string")
    if not notation or raw_id[0] not in "#!":
        return raw_id, None, False
    match = ID_PATTERN.match(raw_id)
    if match is None:
        raise item_error(index, "id", f"{raw_id!r} is not valid notation "
                                      "(#name, !sequence or #name!sequence)")
    sequence = match["seq"] or spec.name
    if match["seq"] is None and spec.prefix is None:
        raise item_error(index, "id", f"class {spec.name} has no id sequence; give !sequence")
    return _drawn(draw, sequence, index, "id"), match["var"], True


def _drawn(draw: Callable[[str], str], sequence: str, index: int, field_name: str) -> str:
    try:
        return draw(sequence)
    except InvalidInput:
        raise item_error(index, field_name, f"unknown sequence {sequence!r}") from None


def declare_variables(items: list[BatchItem]) -> dict[str, BatchItem]:
    """Variables declared by the batch; declaring one twice is an error."""
    variables: dict[str, BatchItem] = {}
    for item in items:
        if item.variable is None:
            continue
        if item.variable in variables:
            raise item_error(item.index, "id", f"variable #{item.variable} is declared twice")
        variables[item.variable] = item
    return variables


class Resolver:
    """Replaces notation in the values of every item, using the batch's variables."""

    def __init__(self, items: list[BatchItem], draw_number: Callable[[str], str]) -> None:
        self.variables = declare_variables(items)
        self.draw_number = draw_number

    def resolve_batch(self, items: list[BatchItem]) -> None:
        for item in items:
            self.resolve_item(item)

    def resolve_item(self, item: BatchItem) -> None:
        if item.state != "pending":
            return
        item.state = "resolving"
        for key, value in list(item.values.items()):
            spec = item.spec.field(key)
            if spec is None or not isinstance(value, str):
                continue
            if spec.type == "ref" or spec.name in DRAWABLE_FIELDS:
                item.values[key] = self.resolve_value(item.index, spec.name, spec.type, value)
        for entry_index, entry in enumerate(item.values.get("input") or []):
            if isinstance(entry, dict) and isinstance(entry.get("inputID"), str):
                entry["inputID"] = self.resolve_value(
                    item.index, f"input.{entry_index}.inputID", "ref", entry["inputID"])
        item.state = "done"

    def resolve_value(self, index: int, field_name: str, field_type: str, value: str) -> Any:
        """The value with notation replaced; plain values come back unchanged."""
        if value.startswith("!"):
            match = SEQUENCE_VALUE.match(value)
            if field_type == "ref" or match is None:
                raise item_error(index, field_name, "!sequence may stand only alone in an id, "
                                                    "name or barcode")
            return _drawn(self.draw_number, match["seq"], index, field_name)
        if not value.startswith("#"):
            return value
        match = REFERENCE_PATTERN.match(value)
        if match is None:
            raise item_error(index, field_name, f"{value!r} is not valid notation "
                                                "(#name or #name.property)")
        target = self.variables.get(match["var"])
        if target is None:
            raise item_error(index, field_name, f"variable #{match['var']} is not declared "
                                                "in this batch")
        prop = match["prop"]
        if prop is None or prop == "id":
            return target.id
        return self._property_of(target, prop, index, field_name)

    def _property_of(self, target: BatchItem, prop: str, index: int, field_name: str) -> Any:
        spec = target.spec.field(prop)
        if spec is None:
            raise item_error(index, field_name, f"#{target.variable}.{prop}: class "
                                                f"{target.spec.name} has no field {prop!r}")
        if spec.name not in target.values:
            if spec.name == "name":
                return target.id
            raise item_error(index, field_name, f"#{target.variable}.{prop} is undefined: "
                                                "that item does not set it")
        if target.state == "resolving":
            raise item_error(index, field_name, f"#{target.variable}.{prop} refers back to "
                                                "the item that asks for it")
        self.resolve_item(target)
        return target.values[spec.name]
