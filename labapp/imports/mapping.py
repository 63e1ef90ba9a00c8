"""Which column of a spreadsheet goes into which field: found automatically, then checked.

A header matches a field by its label (``Expiry date``), its API name (``expiryDate``) or a
common alias (``Expires``, ``Slot``, ``Volume``), ignoring case, spaces, underscores and
hyphens, and a unit in brackets (``Volume (µL)``: the unit is read by :func:`header_unit`).
Unmapped columns are ignored; a column mapped to ``attributes.<key>`` is stored as that
attribute.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from labapp.errors import InvalidInput
from labapp.model.registry import ClassSpec, FieldSpec
from labapp.reading.wording import label_of

ATTRIBUTE_PREFIX = "attributes."
_UNIT_IN_HEADER = re.compile(r"^(?P<base>.*?)\s*[\(\[]\s*(?P<unit>[^\)\]]+?)\s*[\)\]]\s*$")
_IGNORED = re.compile(r"[\s_\-.:/#]+")
# Fields never set by an import: the service computes them.
_NOT_IMPORTED = frozenset({"eClass", "createdBy", "createdUtc", "modifiedBy", "modifiedUtc",
                           "version", "hierarchy", "attributes"})
# Common headers of lab spreadsheets, by the field they name (when the class has it).
ALIASES: dict[str, tuple[str, ...]] = {
    "id": ("identifier", "entity id"),
    "name": ("sample name", "sample", "title"),
    "barcode": ("bar code", "barcode id", "tube barcode"),
    "locationID": ("location", "storage", "storage location", "box", "container"),
    "position": ("slot", "position", "well position", "box position"),
    "expiryDate": ("expiry", "expires", "expiration", "expiration date", "best before"),
    "dateTaken": ("date taken", "collected", "collection date", "sampled", "sampling date"),
    "parentID": ("parent", "parent sample", "parent id"),
    "amount": ("volume", "quantity", "amount", "mass", "weight"),
    "unit": ("unit", "units"),
    "concentrationUnit": ("concentration unit",),
    "status": ("state",),
    "description": ("comment", "comments", "notes", "remarks"),
    "type": ("sample type", "kind"),
    "departmentID": ("department",),
    "projectID": ("project",),
    "experimentID": ("experiment",),
    "plateID": ("plate",),
}


def normal(text: str) -> str:
    """A header or name as matching compares it: case-folded, without spaces, underscores,
    hyphens and dots (``Date_Taken`` = ``date taken`` = ``dateTaken``)."""
    return _IGNORED.sub("", text).casefold()


def split_unit(header: str) -> tuple[str, str | None]:
    """``(header without its unit, the unit)``: ``Volume (µL)`` → ``("Volume", "µL")``."""
    match = _UNIT_IN_HEADER.match(header.strip())
    if match is None or not match["base"]:
        return header.strip(), None
    return match["base"], match["unit"]


def header_unit(header: str) -> str | None:
    """The unit a header names in brackets, if any."""
    return split_unit(header)[1]


def importable(spec: ClassSpec) -> list[FieldSpec]:
    """The fields of a class an import may set, in the class's order."""
    return [field for field in spec.fields.values()
            if field.attr is not None and field.name not in _NOT_IMPORTED
            and (not field.read_only or field.name == "id")]


def _names_of(spec: ClassSpec) -> dict[str, str]:
    """``normalised name → field`` for every label, API name and alias of the class."""
    names: dict[str, str] = {}
    fields = importable(spec)
    for field in fields:  # aliases first: a field's own names override them
        for alias in ALIASES.get(field.name, ()):
            names.setdefault(normal(alias), field.name)
    for field in fields:
        names[normal(field.name)] = field.name
        names[normal(label_of(field.name))] = field.name
    return names


def auto_map(spec: ClassSpec, headers: Sequence[str]) -> dict[str, str]:
    """``column header → field`` for every header that names a field; each field is given to
    the first header naming it. Headers naming nothing are left out (ignored on import)."""
    names = _names_of(spec)
    mapping: dict[str, str] = {}
    taken: set[str] = set()
    for header in headers:
        base, _unit = split_unit(header)
        found = names.get(normal(header)) or names.get(normal(base))
        if found is not None and found not in taken:
            mapping[header] = found
            taken.add(found)
    return mapping


def check_mapping(spec: ClassSpec, headers: Sequence[str],
                  mapping: Mapping[str, str]) -> dict[str, str]:
    """The mapping with each field spelled as the class spells it; columns mapped to nothing
    (empty) are dropped. Raises :class:`InvalidInput` for a column the file lacks, a field
    the class lacks (or that an import cannot set), and a field given two columns."""
    known = set(headers)
    fields = {field.name.lower(): field.name for field in importable(spec)}
    checked: dict[str, str] = {}
    columns_of: dict[str, str] = {}
    for column, target in mapping.items():
        if column not in known:
            raise InvalidInput(f"The file has no column {column!r}.", code="invalid_mapping",
                               errors=[{"field": f"mapping.{column}",
                                        "message": "no such column"}])
        if not target:
            continue
        if target.startswith(ATTRIBUTE_PREFIX):
            key = target[len(ATTRIBUTE_PREFIX):].strip()
            if not key:
                raise InvalidInput(f"Column {column!r}: an attribute needs a name "
                                   "(attributes.<name>).", code="invalid_mapping",
                                   errors=[{"field": f"mapping.{column}",
                                            "message": "attributes.<name>"}])
            name = ATTRIBUTE_PREFIX + key
        else:
            found = fields.get(target.lower())
            if found is None:
                raise InvalidInput(f"Column {column!r}: {spec.name} has no field {target!r} "
                                   "an import can set.", code="invalid_mapping",
                                   errors=[{"field": f"mapping.{column}",
                                            "message": f"unknown field {target!r}"}])
            name = found
        if name in columns_of:
            raise InvalidInput(f"The field {name!r} is mapped twice (columns "
                               f"{columns_of[name]!r} and {column!r}).", code="invalid_mapping",
                               errors=[{"field": f"mapping.{column}",
                                        "message": f"{name} is also mapped from "
                                                   f"{columns_of[name]!r}"}])
        columns_of[name] = column
        checked[column] = name
    return checked
