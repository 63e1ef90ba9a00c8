"""A workbook's XML parts read as bytes, before openpyxl is given them: what would cost it
unbounded memory, and what its read-only mode cannot see (merged cells, formulas without a
saved value).

:func:`scan` reads a part once, in chunks of 1 MiB, each cut before its last ``<`` so that
no tag is split between two pieces (the rest is carried into the next). On the way:

- the prolog goes to expat until the root element starts (a DTD can only come before it):
  a DOCTYPE is refused, as is any encoding but UTF-8; a part expat cannot read as XML (an
  image) is left alone — openpyxl fails on it should it need it;
- a CDATA section is refused, and so are more than ``MAX_TEXT_RUN`` bytes between two
  ``<``: each block of half that length must hold a ``<`` (a C-speed search), only a block
  without one is measured;
- start tags are counted (``<`` minus ``</``), and in a sheet or a shared-string table, in
  and outside its items (rows, strings): what openpyxl keeps while it streams the part.

Only a sheet with a formula is parsed as XML (defusedxml, which refuses DTDs and entities),
to find a formula cell without its cached ``<v>``.
"""
from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO
from xml.etree.ElementTree import ParseError
from xml.parsers import expat

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import iterparse

from labapp.imports.limits import (
    MAX_ITEM_ELEMENTS,
    MAX_OUTSIDE_ELEMENTS,
    MAX_SHARED_STRINGS,
    MAX_SHEET_ROWS,
    MAX_TEXT_RUN,
    ImportRejected,
)

_CHUNK = 2**20
_PREFIX = rb"(?:[^\s<>/:!?]+:)?"
_ROW = re.compile(rb"<(/?)" + _PREFIX + rb"row[\s/>]")
_STRING = re.compile(rb"<(/?)" + _PREFIX + rb"si[\s/>]")
_MERGE = re.compile(rb"<" + _PREFIX + rb"mergeCell[\s/>]")
_FORMULA = re.compile(rb"<" + _PREFIX + rb"f[\s/>]")
_CDATA = b"<![CDATA["
_UTF16 = (b"\xff\xfe", b"\xfe\xff")
SHEET, STRINGS = "worksheet", "sst"


@dataclass
class PartScan:
    """What :func:`scan` found in an XML part: its root element (local name), size, start
    tags, and for a sheet or shared-string table its items (rows, strings); for a sheet
    whether it merges cells or holds a formula."""

    name: str
    root: str
    size: int = 0
    elements: int = 0
    items: int = 0
    merged: bool = False
    formulas: bool = False


class _Root(Exception):
    """The root element started: the prolog is over."""


class _Doctype(Exception):
    """The prolog declares a document type."""


class _Prolog:
    """Expat over a part's prolog: the root element's name, the declared encoding, and
    whether a DOCTYPE came first."""

    def __init__(self) -> None:
        self.parser = expat.ParserCreate()
        self.encoding: str | None = None
        self.parser.XmlDeclHandler = self._declaration
        self.parser.StartDoctypeDeclHandler = self._doctype
        self.parser.StartElementHandler = self._root

    def _declaration(self, _version: str, encoding: str | None, _standalone: int) -> None:
        self.encoding = encoding

    def _doctype(self, *_args: object) -> None:
        raise _Doctype

    def _root(self, name: str, _attributes: object) -> None:
        raise _Root(name.rsplit(":", 1)[-1])

    def root(self, piece: bytes) -> str | None:
        """The root element's local name once ``piece`` reaches it, else None; raises
        _Doctype, or ExpatError for what is not XML."""
        try:
            self.parser.Parse(piece, False)
        except _Root as found:
            return str(found)
        return None


class _Counter:
    """Start tags of a part, in and outside the items openpyxl drops as it streams them."""

    def __init__(self, found: PartScan, label: str) -> None:
        self.found, self.label = found, label
        self.item = {SHEET: _ROW, STRINGS: _STRING}.get(found.root)
        self.inside = False
        self.in_item = self.outside = 0

    def add(self, piece: bytes) -> None:
        found = self.found
        found.elements += piece.count(b"<") - piece.count(b"</")
        if found.root == SHEET:
            found.merged = found.merged or _MERGE.search(piece) is not None
            found.formulas = found.formulas or _FORMULA.search(piece) is not None
        if self.item is None:
            return
        position = 0
        for match in self.item.finditer(piece):
            self._tags(piece, position, match.start())
            end = piece.find(b">", match.end() - 1)
            end = len(piece) if end < 0 else end
            if match.group(1):
                self.inside = False
            else:
                self._item_started()
                self.inside = piece[end - 1:end] != b"/"
            position = end + 1
        self._tags(piece, position, len(piece))

    def _item_started(self) -> None:
        found = self.found
        found.items += 1
        self.in_item = 0
        if found.root == SHEET and found.items > MAX_SHEET_ROWS:
            raise ImportRejected(f"{self.label} holds more than {MAX_SHEET_ROWS:,} rows, more "
                                 "than a spreadsheet can.")
        if found.root == STRINGS and found.items > MAX_SHARED_STRINGS:
            raise ImportRejected(f"{self.label} holds more than {MAX_SHARED_STRINGS:,} "
                                 "different texts; split it into smaller files or save the "
                                 "sheet as CSV.")

    def _tags(self, piece: bytes, start: int, end: int) -> None:
        tags = piece.count(b"<", start, end) - piece.count(b"</", start, end)
        if self.inside:
            self.in_item += tags
            if self.in_item > MAX_ITEM_ELEMENTS:
                what = ("a row of more than 16,384 cells, more than a spreadsheet row can hold"
                        if self.found.root == SHEET else
                        f"a text of more than {MAX_ITEM_ELEMENTS:,} formatted runs")
                raise ImportRejected(f"{self.label} holds {what}.")
        else:
            self.outside += tags
            if self.outside > MAX_OUTSIDE_ELEMENTS:
                raise ImportRejected(
                    f"{self.label} holds more than {MAX_OUTSIDE_ELEMENTS:,} elements besides "
                    "its rows (hyperlinks, comments, formatting rules); remove them or save "
                    "the sheet as CSV.")


def _long_run(piece: bytes) -> bool:
    """Whether ``piece`` holds more than ``MAX_TEXT_RUN`` bytes between two ``<``."""
    step = MAX_TEXT_RUN // 2
    for start in range(0, len(piece), step):
        if piece.find(b"<", start, start + step) < 0:
            begin = max(piece.rfind(b"<", 0, start), 0)
            end = piece.find(b"<", start + step)
            if (len(piece) if end < 0 else end) - begin > MAX_TEXT_RUN:
                return True
    return False


class _LongRun(Exception):
    """More than ``MAX_TEXT_RUN`` bytes without a ``<``."""


def _pieces(source: IO[bytes]) -> Iterator[bytes]:
    """The part in pieces that each end before a ``<`` (but the last); raises _LongRun."""
    carry = b""
    while chunk := source.read(_CHUNK):
        window = carry + chunk
        cut = window.rfind(b"<")
        if cut <= 0:
            if len(window) > MAX_TEXT_RUN:
                raise _LongRun
            carry = window
            continue
        yield window[:cut]
        carry = window[cut:]
    if carry:
        yield carry


def scan(source: IO[bytes], name: str, label: str) -> PartScan | None:
    """What the part ``name`` read from ``source`` holds (see the module docstring), or None
    when it is not XML. Raises :class:`ImportRejected`; ``label`` names the file."""
    where = f"{label} (its part {name})"
    prolog = _Prolog()
    found: PartScan | None = None
    counter: _Counter | None = None
    size, utf16 = 0, False
    try:
        for piece in _pieces(source):
            if size == 0:
                utf16 = piece.startswith(_UTF16) or b"\x00" in piece[:2]
            size += len(piece)
            if counter is None:
                root = prolog.root(piece)  # expat stops at the root: what follows is unread
                if root is None:
                    continue
                if utf16 or (prolog.encoding or "utf-8").lower() != "utf-8":
                    raise ImportRejected(f"{where} is not encoded in UTF-8, as spreadsheet "
                                         "programs write workbooks.")
                found = PartScan(name, root)
                counter = _Counter(found, where)
            if _long_run(piece):
                raise _LongRun
            if _CDATA in piece:
                raise ImportRejected(f"{where} holds a CDATA section, which spreadsheet "
                                     "programs never write.")
            counter.add(piece)
    except expat.ExpatError:
        return None  # before the root element: this part is not XML
    except _Doctype:
        raise ImportRejected(f"{where} declares a document type (DOCTYPE), which spreadsheet "
                             "programs never write: it can expand to gigabytes or read files "
                             "of the server, so the file is refused.") from None
    except _LongRun:
        if found is None:
            return None
        raise ImportRejected(f"{where} holds a text of more than {MAX_TEXT_RUN:,} bytes, "
                             "longer than a cell may hold.") from None
    if found is not None:
        found.size = size
    return found


def formula_without_value(archive: zipfile.ZipFile, member: str, label: str) -> str | None:
    """The reference of the first cell with a formula and no cached value, or None. Raises
    :class:`ImportRejected` for a sheet that is not well-formed XML."""
    try:
        return _first_formula_without_value(archive, member)
    except (ParseError, DefusedXmlException) as error:
        raise ImportRejected(f"{label} is damaged: its XML cannot be read ({error}).") from None


def _first_formula_without_value(archive: zipfile.ZipFile, member: str) -> str | None:
    with archive.open(member) as source:
        for _event, element in iterparse(source, events=("end",), forbid_dtd=True):
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


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]

