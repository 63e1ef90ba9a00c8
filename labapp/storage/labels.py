"""Printable labels: Code 128 barcodes (python-barcode) and QR codes (segno) drawn as SVG on
the server, for samples, plates and locations.

A label is asked for by a code as a scanner reads it: the barcode of an entity the caller
may see, else its id (the rule of bench mode). It shows the name made printable and
shortened so that the labels printed together stay apart (:mod:`label_names`: the start
and the distinguishing end, or the part where alike names differ), the class and id, the
created date and the owner's initials (when they fit: the page hides what would overflow),
the code as Code 128 with its text printed under the bars and, on sheets, as a standard QR
code. Not a Micro QR code, which segno picks for short texts and which zbar and many
handheld scanners cannot read. A code Code 128 cannot carry (anything but printable ASCII)
gets no bars: its text and, on sheets, its QR code still print. Two formats
(:data:`FORMATS`): A4 sheets of 3 × 7 labels and label-printer rolls of one label per page.

The only module that imports those libraries. Both draw with no image library. The SVG is
inlined into the labels page, whose Content-Security-Policy forbids ``style`` attributes, so
python-barcode's ``style="fill:black"`` declarations become the equivalent presentation
attributes (``fill="black"``).
"""
from __future__ import annotations

import io
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import barcode
import segno
from barcode.writer import SVGWriter
from markupsafe import Markup
from sqlalchemy import or_, select

from labapp.access.actor import Actor
from labapp.access.visibility import readable
from labapp.db import db
from labapp.errors import InvalidInput
from labapp.model import Entity, User
from labapp.storage.label_names import distinct, printable

LABEL_CLASSES = ("Sample", "Plate", "Location")
MAX_LABELS = 300
QR_QUIET_ZONE = 4  # modules of white around a QR code, as ISO/IEC 18004 asks
# The narrowest bar: two dots of a 203-dpi label printer. At python-barcode's 0.2 mm the
# bars fell between the dots and a roll label's code no longer decoded at 203 or 300 dpi.
# The quiet zone either side is 10 of them, as the symbology asks.
CODE128_MODULE_MM = 0.25
CODE128_QUIET_ZONE_MM = 10 * CODE128_MODULE_MM
PX_PER_MM = 96 / 25.4  # SVG user units (CSS pixels) per millimetre
_STYLE = re.compile(r'\sstyle="([^"]*)"')
_PROLOGUE = re.compile(r"^.*?(?=<svg)", re.S)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_SIZE = re.compile(r'<svg([^>]*) width="([\d.]+)(mm)?" height="([\d.]+)(mm)?"')
_WORDS = re.compile(r"[^\W\d_]+")
_ENTITY = Entity.__table__
_OWNER = Entity.__table__.alias("owner")
_USER = User.__table__


@dataclass(frozen=True)
class LabelFormat:
    """A way of printing labels: its ``format`` parameter value, what the page's selector
    says, how many columns of a name it prints (:func:`label_names.width`: on a sheet two
    lines of about 16, on a roll one line) and whether a QR code fits too."""

    name: str
    title: str
    name_columns: int
    qr: bool


FORMATS = {layout.name: layout for layout in (
    LabelFormat("sheet", "A4 sheet: 3 × 7 labels of 63.5 × 38.1 mm", 32, True),
    LabelFormat("roll", "Label printer roll: one 50 × 25 mm label per page", 23, False))}
DEFAULT_FORMAT = "sheet"


def label_format(name: str | None) -> LabelFormat:
    """The format called ``name`` (:data:`DEFAULT_FORMAT` when none is given); 400 for any
    other name."""
    layout = FORMATS.get(name or DEFAULT_FORMAT)
    if layout is None:
        raise InvalidInput(f"Unknown label format {name!r}: choose "
                           f"{' or '.join(repr(known) for known in FORMATS)}.")
    return layout


def initials_of(full_name: str | None) -> str:
    """The first letter of each word of a person's name, upper case (``Carol Chemist`` →
    ``CC``, ``Jean-Luc Picard`` → ``JLP``); empty when the name has no letters."""
    return "".join(word[0].upper() for word in _WORDS.findall(full_name or ""))


def _owner_mark(user_id: str | None, chosen: str | None, full_name: str | None) -> str | None:
    """What a label prints for an entity's owner: the initials the user chose, else those of
    their full name, else their username; None when the entity has no owner."""
    if user_id is None:
        return None
    return chosen or initials_of(full_name) or user_id


def _attributes(match: re.Match[str]) -> str:
    pairs = (part.split(":", 1) for part in match[1].split(";") if ":" in part)
    return "".join(f' {name.strip()}="{value.strip()}"' for name, value in pairs)


def _view_box(match: re.Match[str]) -> str:
    width = float(match[2]) * (PX_PER_MM if match[3] else 1)
    height = float(match[4]) * (PX_PER_MM if match[5] else 1)
    return f'{match[0]} viewBox="0 0 {width:.3f} {height:.3f}"'


def _clean(svg: str) -> str:
    """The ``<svg>`` element alone, styled by attributes, with a ``viewBox`` so the page can
    size it (a long barcode shrinks into the label instead of being cut off)."""
    svg = _COMMENT.sub("", _PROLOGUE.sub("", svg, count=1)).replace(' id="barcode_group"', "")
    return _SIZE.sub(_view_box, _STYLE.sub(_attributes, svg), count=1)


def code128_carries(text: str) -> bool:
    """Whether a Code 128 barcode can carry ``text`` so that a scanner types it back:
    printable ASCII only (not empty)."""
    return text.isascii() and text.isprintable() and text != ""


def code128_svg(text: str) -> Markup:
    """A Code 128 barcode of ``text`` (see :func:`code128_carries`) as inline SVG markup
    (no human-readable line: the label prints the code under it as text)."""
    buffer = io.BytesIO()
    barcode.get("code128", text, writer=SVGWriter()).write(
        buffer, options={"write_text": False, "module_height": 8.0,
                         "module_width": CODE128_MODULE_MM,
                         "quiet_zone": CODE128_QUIET_ZONE_MM})
    return Markup(_clean(buffer.getvalue().decode()))


def qr_svg(text: str) -> Markup:
    """A standard QR code (never a Micro QR code) of ``text`` as inline SVG markup, with
    its quiet zone."""
    buffer = io.BytesIO()
    segno.make_qr(text, error="m").save(buffer, kind="svg", xmldecl=False, svgns=True,
                                        scale=3, border=QR_QUIET_ZONE)
    return Markup(_clean(buffer.getvalue().decode()))


@dataclass(frozen=True)
class Label:
    """One label: what it names (``name`` in one clean line, see
    :func:`label_names.printable`, and ``short_name`` as the label prints it, see
    :func:`labels_for`), the code it carries (the barcode when set, else the id) drawn as
    Code 128 (None when Code 128 cannot carry it) and, when the format has room, as a QR
    code, the created date (``yyyy-mm-dd``, UTC) and the owner's mark."""

    id: str
    eclass: str
    name: str
    short_name: str
    code: str
    created: str
    owner: str | None
    code128: Markup | None
    qr: Markup | None


def _visible_rows(actor: Actor, codes: list[str]) -> list[Any]:
    """The visible entities whose barcode or id is among ``codes``, with their owners."""
    if not codes:
        return []
    query = (select(_ENTITY.c.id, _ENTITY.c.eclass, _ENTITY.c.name, _ENTITY.c.barcode,
                    _ENTITY.c.created_utc, _ENTITY.c.user_id,
                    _OWNER.c.name.label("owner_name"), _USER.c.initials)
             .select_from(_ENTITY.outerjoin(_OWNER, _OWNER.c.id == _ENTITY.c.user_id)
                          .outerjoin(_USER, _USER.c.id == _ENTITY.c.user_id))
             .where(or_(_ENTITY.c.barcode.in_(codes), _ENTITY.c.id.in_(codes)),
                    readable(actor, _ENTITY.c)))
    return list(db.session.execute(query))


def labels_for(actor: Actor, codes: Iterable[str],
               layout: LabelFormat | None = None) -> tuple[list[Label], list[str]]:
    """Labels of the visible samples, plates and locations that ``codes`` name (each a
    barcode, else an id), in the order asked, one per entity, at most :data:`MAX_LABELS`
    codes read, drawn for ``layout`` (the default format when None); and the codes left out
    (unknown, hidden, or naming another class). Names print as :func:`label_names.distinct`
    shortens them together, so that names that differ print differently on one page."""
    layout = layout or FORMATS[DEFAULT_FORMAT]
    wanted = list(dict.fromkeys(code for code in codes if code))[:MAX_LABELS]
    rows = _visible_rows(actor, wanted)
    by_barcode = {row.barcode: row for row in rows if row.barcode is not None}
    by_id = {row.id: row for row in rows}
    chosen: dict[str, Any] = {}
    skipped: list[str] = []
    for code in wanted:
        row = by_barcode.get(code) or by_id.get(code)
        if row is None or row.eclass not in LABEL_CLASSES:
            skipped.append(code)
        else:
            chosen.setdefault(row.id, row)
    names = [printable(row.name) for row in chosen.values()]
    labels = []
    for row, name, short_name in zip(chosen.values(), names,
                                     distinct(names, layout.name_columns), strict=True):
        printed = row.barcode or row.id
        labels.append(Label(
            row.id, row.eclass, name, short_name, printed,
            row.created_utc.date().isoformat(),
            _owner_mark(row.user_id, row.initials, row.owner_name),
            code128_svg(printed) if code128_carries(printed) else None,
            qr_svg(printed) if layout.qr else None))
    return labels, skipped
