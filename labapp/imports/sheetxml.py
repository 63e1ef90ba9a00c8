"""What openpyxl's read-only mode cannot see, read from a sheet's XML: merged cells and
formulas without a saved value.

The sheet is scanned as bytes, chunk by chunk (a regular expression over each chunk, with an
overlap so a tag split between chunks is still found). Only when a formula is present is the
sheet parsed as XML to find a formula cell without its cached ``<v>``.
"""
from __future__ import annotations

import re
import zipfile
from xml.etree.ElementTree import iterparse

MAX_MEMBERS = 10_000
# A part bigger than RATIO_FROM bytes compressed more than MAX_RATIO to 1 is a zip bomb:
# sheet XML compresses 5-30 to 1, deflate's ceiling is about 1000 to 1.
RATIO_FROM = 16 * 2**20
MAX_RATIO = 200
_CHUNK = 2**20
_OVERLAP = 64
_MERGE = re.compile(rb"<(?:\w+:)?mergeCell[\s>/]")
_FORMULA = re.compile(rb"<(?:\w+:)?f[\s>/]")


def sheet_problem(archive: zipfile.ZipFile, member: str, label: str) -> str | None:
    """Why a sheet cannot be imported — merged cells, or a formula whose value was never
    saved — or None."""
    formulas = False
    with archive.open(member) as source:
        tail = b""
        while chunk := source.read(_CHUNK):
            window = tail + chunk
            if _MERGE.search(window):
                return (f"{label} has merged cells; unmerge them so that every row holds "
                        "its own values.")
            formulas = formulas or _FORMULA.search(window) is not None
            tail = window[-_OVERLAP:]
    if formulas:
        cell = _formula_without_value(archive, member)
        if cell is not None:
            return (f"{label}: cell {cell} holds a formula whose value was never calculated; "
                    "open the file in a spreadsheet program and save it again, or paste the "
                    "values.")
    return None


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _formula_without_value(archive: zipfile.ZipFile, member: str) -> str | None:
    """The reference of the first cell with a formula and no cached value, or None."""
    with archive.open(member) as source:
        for _event, element in iterparse(source, events=("end",)):
            if _local(element.tag) != "c":
                if _local(element.tag) == "row":
                    element.clear()
                continue
            formula = value = None
            for child in element:
                name = _local(child.tag)
                if name == "f":
                    formula = child
                elif name in ("v", "is"):
                    value = child
            if formula is not None and (value is None or (
                    _local(value.tag) == "v" and not (value.text or "").strip())):
                return element.get("r") or "?"
    return None
