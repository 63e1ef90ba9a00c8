"""An XLSX archive checked before openpyxl opens it (the limits are in
:mod:`labapp.imports.limits`).

1. The archive's directory alone refuses what is not a zip archive and a zip bomb.
2. Every part is read once by :func:`labapp.imports.sheetxml.scan`: no DOCTYPE anywhere, no
   overlong text, bounded rows and strings; damaged compressed data is found here too.
3. The parts openpyxl's read-only load parses whole — content types, the workbook and its
   relationships, styles, theme, document properties, each sheet's relationships, chart
   sheets with their drawings and charts — are found as openpyxl finds them (by fixed
   names, content types, relationships) and must stay under ``MAX_PART_SIZE`` bytes and
   ``MAX_PART_ELEMENTS`` elements. The parts it streams — the sheets and the shared-string
   table — must be what they are named as; a part may not be both.
"""
from __future__ import annotations

import posixpath
import zipfile
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring

from labapp.imports.limits import (
    MAX_MEMBERS,
    MAX_PART_ELEMENTS,
    MAX_PART_SIZE,
    MAX_RATIO,
    MAX_SHARED_STRINGS_SIZE,
    RATIO_FROM,
    ImportRejected,
)
from labapp.imports.sheetxml import SHEET, STRINGS, PartScan, scan

_TYPES = "{http://schemas.openxmlformats.org/package/2006/content-types}"
_RELATIONSHIPS = "{http://schemas.openxmlformats.org/package/2006/relationships}"
_SPREADSHEET = "application/vnd.openxmlformats-officedocument.spreadsheetml"
_MACROS = "application/vnd.ms-excel"
# In the order openpyxl looks for the workbook part.
_WORKBOOK_TYPES = (f"{_MACROS}.template.macroEnabled.main+xml", f"{_SPREADSHEET}.template.main+xml",
                   f"{_MACROS}.sheet.macroEnabled.main+xml", f"{_SPREADSHEET}.sheet.main+xml")
_SHARED_STRINGS_TYPE = f"{_SPREADSHEET}.sharedStrings+xml"
_CONTENT_TYPES = "[Content_Types].xml"
_DEFAULT_WORKBOOK = "xl/workbook.xml"
# Read whole by openpyxl whenever present, by these names (openpyxl.xml.constants: ARC_*).
_FIXED = (_CONTENT_TYPES, "docProps/core.xml", "docProps/custom.xml", "xl/theme/theme1.xml",
          "xl/styles.xml")
_DAMAGED = (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError,
            RuntimeError)


@dataclass(frozen=True)
class Inspection:
    """What :func:`inspect` found: the scan of each XML part by name."""

    parts: dict[str, PartScan]


def inspect(path: Path, filename: str, max_uncompressed: int) -> Inspection:
    """Check the XLSX archive at ``path`` (see the module docstring); what its XML parts hold.
    Raises :class:`ImportRejected` naming ``filename``."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
            _check_directory(members, filename, max_uncompressed)
            parts: dict[str, PartScan] = {}
            for member in members:
                if member.is_dir():
                    continue
                with archive.open(member) as source:
                    found = scan(source, member.filename, filename)
                if found is not None:
                    parts[member.filename] = found
            _check_roles(archive, parts, filename)
    except _DAMAGED as error:
        raise ImportRejected(f"{filename} is not a valid XLSX workbook: it is damaged or "
                             f"incomplete ({type(error).__name__}).") from None
    return Inspection(parts)


def _check_directory(members: list[zipfile.ZipInfo], filename: str,
                     max_uncompressed: int) -> None:
    """Refuse a zip bomb from the archive's directory alone."""
    if len(members) > MAX_MEMBERS:
        raise ImportRejected(f"{filename} holds {len(members):,} parts; an XLSX workbook has "
                             "far fewer.")
    total = sum(member.file_size for member in members)
    if total > max_uncompressed:
        raise ImportRejected(f"{filename} unpacks to {total / 2**20:,.0f} MiB, more than the "
                             f"{max_uncompressed / 2**20:,.0f} MiB allowed.")
    for member in members:
        if member.file_size > RATIO_FROM and (
                member.file_size > MAX_RATIO * max(member.compress_size, 1)):
            ratio = member.file_size // max(member.compress_size, 1)
            raise ImportRejected(f"{filename} is compressed {ratio:,} to 1 in "
                                 f"{member.filename}: refused as a zip bomb.")


@dataclass
class _Roles:
    """The parts openpyxl reads whole, and those it streams."""

    whole: set[str]
    sheets: set[str]
    strings: str | None


def _check_roles(archive: zipfile.ZipFile, parts: dict[str, PartScan], filename: str) -> None:
    names = set(archive.namelist())
    roles = _roles(archive, parts, names, filename)
    for name in sorted(roles.whole & names):
        _check_whole(archive, parts, name, filename)
        if name in roles.sheets or name == roles.strings:
            raise ImportRejected(f"{filename} is not a valid XLSX workbook: its part {name} "
                                 "is used as two different things.")
    for name in sorted(roles.sheets & names):
        if name not in parts or parts[name].root != SHEET:
            raise ImportRejected(f"{filename} is not a valid XLSX workbook: its sheet {name} "
                                 "is not a worksheet.")
    strings = roles.strings
    if strings is not None and strings in names:
        if strings not in parts or parts[strings].root != STRINGS:
            raise ImportRejected(f"{filename} is not a valid XLSX workbook: {strings} is not "
                                 "a table of shared strings.")
        if archive.getinfo(strings).file_size > MAX_SHARED_STRINGS_SIZE:
            raise ImportRejected(
                f"The texts of {filename} (its shared strings) unpack to more than "
                f"{MAX_SHARED_STRINGS_SIZE / 2**20:,.0f} MiB; split it into smaller files or "
                "save the sheet as CSV.")


def _check_whole(archive: zipfile.ZipFile, parts: dict[str, PartScan], name: str,
                 filename: str) -> None:
    """Refuse a part openpyxl parses whole that is too big to."""
    size = archive.getinfo(name).file_size
    elements = parts[name].elements if name in parts else 0
    if size > MAX_PART_SIZE or elements > MAX_PART_ELEMENTS:
        raise ImportRejected(
            f"{filename} cannot be imported: its part {name} is too large "
            f"({size / 2**20:,.1f} MiB, {elements:,} elements; at most "
            f"{MAX_PART_SIZE / 2**20:,.0f} MiB and {MAX_PART_ELEMENTS:,} elements). Save "
            "the sheet as CSV, or copy it into a new workbook.")


def _roles(archive: zipfile.ZipFile, parts: dict[str, PartScan], names: set[str],
           filename: str) -> _Roles:
    """The roles of the parts as openpyxl's read-only load finds them (a part missing where
    openpyxl looks is left to openpyxl to refuse)."""
    roles = _Roles(set(_FIXED), set(), None)
    types = _tree(archive, parts, _CONTENT_TYPES, filename)
    overrides = [] if types is None else [
        (item.get("PartName", "").lstrip("/"), item.get("ContentType", ""))
        for item in types.iter(f"{_TYPES}Override")]
    defaults = set() if types is None else {
        item.get("ContentType", "") for item in types.iter(f"{_TYPES}Default")}
    workbook = next((part for wanted in _WORKBOOK_TYPES for part, kind in overrides
                     if kind == wanted), None)
    if workbook is None and defaults & set(_WORKBOOK_TYPES):
        workbook = _DEFAULT_WORKBOOK
    roles.strings = next((part for part, kind in overrides if kind == _SHARED_STRINGS_TYPE),
                         None)
    if workbook is None:
        return roles
    roles.whole.add(workbook)
    for kind, target in _relations(archive, parts, names, workbook, filename, roles):
        if kind == "worksheet":
            roles.sheets.add(target)
            roles.whole.add(_relations_of(target))
        elif kind == "styles":
            roles.whole.add(target)
        elif kind == "chartsheet":
            roles.whole.add(target)
            for drawing in _targets(archive, parts, names, target, filename, roles, "drawing"):
                roles.whole.add(drawing)
                for shown in _targets(archive, parts, names, drawing, filename, roles,
                                      "chart", "image"):
                    roles.whole.update((shown, _relations_of(shown)))
    return roles


def _relations_of(part: str) -> str:
    """The relationships part of ``part`` (openpyxl's ``get_rels_path``)."""
    folder, name = posixpath.split(part)
    return posixpath.join(folder, "_rels", f"{name}.rels")


def _relations(archive: zipfile.ZipFile, parts: dict[str, PartScan], names: set[str],
               part: str, filename: str, roles: _Roles) -> Iterable[tuple[str, str]]:
    """``(type's last word, target part)`` of each internal relationship of ``part``, its
    targets resolved as openpyxl's ``get_dependents`` does; the relationships part joins the
    parts read whole."""
    path = _relations_of(part)
    roles.whole.add(path)
    tree = _tree(archive, parts, path, filename) if path in names else None
    if tree is None:
        return []
    parent = posixpath.split(posixpath.dirname(path))[0]
    found = []
    for item in tree.iter(f"{_RELATIONSHIPS}Relationship"):
        target = item.get("Target", "")
        if item.get("TargetMode") == "External" or not target:
            continue
        target = target[1:] if target.startswith("/") else posixpath.normpath(
            posixpath.join(parent, target))
        found.append((item.get("Type", "").rsplit("/", 1)[-1], target))
    return found


def _targets(archive: zipfile.ZipFile, parts: dict[str, PartScan], names: set[str], part: str,
             filename: str, roles: _Roles, *kinds: str) -> list[str]:
    return [target for kind, target in _relations(archive, parts, names, part, filename, roles)
            if kind in kinds]


def _tree(archive: zipfile.ZipFile, parts: dict[str, PartScan], name: str,
          filename: str) -> Any:
    """The parsed part ``name`` (checked to be small enough first), or None when it is
    missing or not XML."""
    if name not in parts:
        return None
    _check_whole(archive, parts, name, filename)
    try:
        return fromstring(archive.read(name))
    except (SyntaxError, DefusedXmlException):  # ParseError is a SyntaxError
        return None
