"""Hostile spreadsheets for the import tests, written to disk as they are generated (never
held whole in memory): a CSV header of millions of columns, a workbook of millions of shared
strings, XML parts carrying a DOCTYPE, damaged archives.

A workbook is assembled part by part with :mod:`zipfile` (openpyxl cannot write most of
these): :func:`workbook` takes each part as bytes or as an iterable of byte chunks streamed
into the archive.
"""
from __future__ import annotations

import zipfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
OFFICE_RELS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
SHEET = "xl/worksheets/sheet1.xml"
STRINGS = "xl/sharedStrings.xml"
_TYPES = "application/vnd.openxmlformats-officedocument.spreadsheetml"
_DECLARATION = b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
_CHUNK = 2**20

Part = bytes | Iterable[bytes]

BILLION_LAUGHS = (b'<!DOCTYPE lolz [<!ENTITY lol "lol">'
                  + b"".join(b'<!ENTITY lol%d "%s">' % (level, (b"&lol%d;" % (level - 1)
                                                                 if level > 1 else b"&lol;") * 10)
                             for level in range(1, 10))
                  + b"]>")
EXTERNAL_ENTITY = b'<!DOCTYPE r [<!ENTITY secret SYSTEM "file:///etc/passwd">]>'


def _content_types(shared_strings: bool) -> bytes:
    strings = (f'<Override PartName="/{STRINGS}" ContentType="{_TYPES}.sharedStrings+xml"/>'
               if shared_strings else "")
    return _DECLARATION + (
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package'
        '.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
        f'<Override PartName="/xl/workbook.xml" ContentType="{_TYPES}.sheet.main+xml"/>'
        f'<Override PartName="/{SHEET}" ContentType="{_TYPES}.worksheet+xml"/>'
        f"{strings}</Types>").encode()


def _workbook_rels(shared_strings: bool) -> bytes:
    strings = (f'<Relationship Id="rId2" Type="{OFFICE_RELS}/sharedStrings" '
               'Target="sharedStrings.xml"/>' if shared_strings else "")
    return _DECLARATION + (
        f'<Relationships xmlns="{RELS}"><Relationship Id="rId1" '
        f'Type="{OFFICE_RELS}/worksheet" Target="worksheets/sheet1.xml"/>{strings}'
        "</Relationships>").encode()


def basic_parts(*, shared_strings: bool = False) -> dict[str, Part]:
    """The parts of a one-sheet workbook except the sheet (and its shared strings)."""
    return {
        "[Content_Types].xml": _content_types(shared_strings),
        "_rels/.rels": _DECLARATION + (
            f'<Relationships xmlns="{RELS}"><Relationship Id="rId1" '
            f'Type="{OFFICE_RELS}/officeDocument" Target="xl/workbook.xml"/>'
            "</Relationships>").encode(),
        "xl/workbook.xml": _DECLARATION + (
            f'<workbook xmlns="{MAIN}" xmlns:r="{OFFICE_RELS}"><sheets>'
            '<sheet name="Samples" sheetId="1" r:id="rId1"/></sheets></workbook>').encode(),
        "xl/_rels/workbook.xml.rels": _workbook_rels(shared_strings),
    }


def sheet_xml(rows: Iterable[Iterable[str]], *, prologue: bytes = b"",
              dimension: str | None = None) -> Iterator[bytes]:
    """A sheet of inline-string cells (``prologue`` goes between the XML declaration and the
    root element: a DOCTYPE; ``dimension`` is the range the sheet declares, as Excel writes
    it, which spares openpyxl reading the whole sheet when it opens the workbook)."""
    declared = f'<dimension ref="{dimension}"/>' if dimension else ""
    yield _DECLARATION + prologue + f'<worksheet xmlns="{MAIN}">{declared}<sheetData>'.encode()
    for number, row in enumerate(rows, start=1):
        cells = "".join(f'<c t="inlineStr"><is><t>{value}</t></is></c>' for value in row)
        yield f'<row r="{number}">{cells}</row>'.encode()
    yield b"</sheetData></worksheet>"


def workbook(path: Path, parts: Mapping[str, Part]) -> Path:
    """Write the archive ``path`` of ``parts`` (deflated), streaming iterable parts."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in parts.items():
            if isinstance(content, bytes):
                archive.writestr(name, content)
                continue
            with archive.open(name, "w", force_zip64=True) as target:
                buffer = bytearray()
                for piece in content:
                    buffer += piece
                    if len(buffer) >= _CHUNK:
                        target.write(buffer)
                        buffer.clear()
                target.write(buffer)
    return path


def small_workbook(path: Path, *, prologue: bytes = b"", part: str = SHEET,
                   cell: str = "S-1") -> Path:
    """A valid two-row workbook; ``prologue`` (a DOCTYPE) is put into ``part``, ``cell`` is
    the first data cell (an entity reference, say)."""
    parts = basic_parts()
    parts[SHEET] = b"".join(sheet_xml([["Name", "Amount"], [cell, "5"]]))
    target = parts[part]
    assert isinstance(target, bytes)
    if prologue:
        parts[part] = target.replace(_DECLARATION, _DECLARATION + prologue, 1)
    return workbook(path, parts)


def shared_strings_workbook(path: Path, count: int, *, length: int = 8) -> Path:
    """A workbook whose shared-string table holds ``count`` distinct strings (``Name``, then
    numbers of ``length`` digits), with a sheet of a header ``Name`` and one row using the
    second of them."""
    def strings() -> Iterator[bytes]:
        yield _DECLARATION + (f'<sst xmlns="{MAIN}" count="{count}" '
                              f'uniqueCount="{count}"><si><t>Name</t></si>').encode()
        block: list[str] = []
        for number in range(1, count):
            block.append(f"<si><t>{number:0{length}d}</t></si>")
            if len(block) == 10_000:
                yield "".join(block).encode()
                block.clear()
        yield "".join(block).encode() + b"</sst>"

    parts = basic_parts(shared_strings=True)
    parts[SHEET] = _DECLARATION + (
        f'<worksheet xmlns="{MAIN}"><sheetData>'
        '<row r="1"><c r="A1" t="s"><v>0</v></c></row>'
        '<row r="2"><c r="A2" t="s"><v>1</v></c></row>'
        "</sheetData></worksheet>").encode()
    parts[STRINGS] = strings()
    return workbook(path, parts)


def wide_csv(path: Path, columns: int, *, rows: int = 1) -> Path:
    """A CSV whose header names ``columns`` columns (``Name,c1,c2,…`` in hexadecimal), and
    ``rows`` data rows of as many cells."""
    with path.open("w", encoding="utf-8", newline="") as target:
        for line in range(rows + 1):
            prefix = "c" if line == 0 else f"r{line}-"
            target.write("Name," if line == 0 else f"S-{line},")
            for start in range(1, columns, 100_000):
                stop = min(start + 100_000, columns)
                target.write(",".join(f"{prefix}{n:x}" for n in range(start, stop)))
                if stop < columns:
                    target.write(",")
            target.write("\n")
    return path


def long_line_csv(path: Path, characters: int) -> Path:
    """A CSV of a header and one data row holding a cell of ``characters`` characters."""
    with path.open("w", encoding="utf-8", newline="") as target:
        target.write("Name,Description\nS-1,")
        for start in range(0, characters, _CHUNK):
            target.write("x" * min(_CHUNK, characters - start))
        target.write("\n")
    return path


def padded_sheet(path: Path, *, rows: int = 0, extras: int = 0) -> Path:
    """A workbook whose sheet has a header and one data row, then ``rows`` empty rows that
    carry formatting (openpyxl keeps a record of each) and ``extras`` hyperlinks after its
    rows (openpyxl keeps an object of each)."""
    parts = basic_parts()

    def padded() -> Iterator[bytes]:
        pieces = list(sheet_xml([["Name", "Amount"], ["S-1", "5"]]))
        yield from pieces[:-1]
        for start in range(3, rows + 3, 10_000):
            yield b"".join(b'<row r="%d" ht="30" customHeight="1"/>' % number
                           for number in range(start, min(start + 10_000, rows + 3)))
        yield b"</sheetData>"
        if extras:
            yield b"<hyperlinks>"
            for start in range(0, extras, 10_000):
                yield b"".join(b'<hyperlink ref="A%d" location="Sheet1!A1" display="x"/>'
                               % (number + 1) for number in range(start, min(start + 10_000,
                                                                             extras)))
            yield b"</hyperlinks>"
        yield b"</worksheet>"

    parts[SHEET] = padded()
    return workbook(path, parts)


def styled_workbook(path: Path, formats: int) -> Path:
    """A valid workbook whose styles part holds ``formats`` cell formats (openpyxl parses
    styles whole, ~1.5 KiB a format)."""
    parts = basic_parts()
    parts[SHEET] = b"".join(sheet_xml([["Name", "Amount"], ["S-1", "5"]]))
    xf = b'<xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"><alignment/></xf>'
    parts["xl/styles.xml"] = (
        _DECLARATION + f'<styleSheet xmlns="{MAIN}">'.encode()
        + b'<fonts count="1"><font><sz val="11"/><name val="Calibri"/></font></fonts>'
          b'<fills count="1"><fill><patternFill patternType="none"/></fill></fills>'
          b'<borders count="1"><border/></borders><cellStyleXfs count="1"><xf numFmtId="0" '
          b'fontId="0" fillId="0" borderId="0"/></cellStyleXfs>'
        + f'<cellXfs count="{formats}">'.encode() + xf * formats + b"</cellXfs>"
        + b'<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/>'
          b"</cellStyles></styleSheet>")
    parts["[Content_Types].xml"] = _content_types(False).replace(
        b"</Types>", f'<Override PartName="/xl/styles.xml" ContentType="{_TYPES}.styles+xml"/>'
                     "</Types>".encode())
    parts["xl/_rels/workbook.xml.rels"] = _workbook_rels(False).replace(
        b"</Relationships>", f'<Relationship Id="rId3" Type="{OFFICE_RELS}/styles" '
                             'Target="styles.xml"/></Relationships>'.encode())
    return workbook(path, parts)
