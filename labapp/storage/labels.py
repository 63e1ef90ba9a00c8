"""Printable labels: Code 128 barcodes (python-barcode) and QR codes (segno) drawn as SVG on
the server, for samples, plates and locations.

The only module that imports those libraries. Both draw with no image library. The SVG is
inlined into the labels page, whose Content-Security-Policy forbids ``style`` attributes, so
python-barcode's ``style="fill:black"`` declarations become the equivalent presentation
attributes (``fill="black"``).
"""
from __future__ import annotations

import io
import re
from dataclasses import dataclass

import barcode
import segno
from barcode.writer import SVGWriter
from markupsafe import Markup

from labapp.access.actor import Actor
from labapp.entities.reading import visible_names
from labapp.storage.service import barcodes_of

LABEL_CLASSES = ("Sample", "Plate", "Location")
MAX_LABELS = 300
_STYLE = re.compile(r'\sstyle="([^"]*)"')
_PROLOGUE = re.compile(r"^.*?(?=<svg)", re.S)
_COMMENT = re.compile(r"<!--.*?-->", re.S)


def _attributes(match: re.Match[str]) -> str:
    pairs = (part.split(":", 1) for part in match[1].split(";") if ":" in part)
    return "".join(f' {name.strip()}="{value.strip()}"' for name, value in pairs)


def _clean(svg: str) -> str:
    svg = _COMMENT.sub("", _PROLOGUE.sub("", svg, count=1)).replace(' id="barcode_group"', "")
    return _STYLE.sub(_attributes, svg)


def code128_svg(text: str) -> Markup:
    """A Code 128 barcode of ``text`` as inline SVG markup (no human-readable line: the
    label prints the code itself)."""
    buffer = io.BytesIO()
    barcode.get("code128", text, writer=SVGWriter()).write(
        buffer, options={"write_text": False, "module_height": 8.0, "quiet_zone": 2.0})
    return Markup(_clean(buffer.getvalue().decode()))


def qr_svg(text: str) -> Markup:
    """A QR code of ``text`` as inline SVG markup."""
    buffer = io.BytesIO()
    segno.make(text, error="m").save(buffer, kind="svg", xmldecl=False, svgns=True,
                                     scale=3, border=2)
    return Markup(_clean(buffer.getvalue().decode()))


@dataclass(frozen=True)
class Label:
    """One label: what it names and the code it carries (the barcode when set, else the
    id), drawn both ways."""

    id: str
    eclass: str
    name: str
    code: str
    code128: Markup
    qr: Markup


def labels_for(actor: Actor, ids: list[str]) -> tuple[list[Label], list[str]]:
    """Labels of the visible samples, plates and locations among ``ids`` (in that order, at
    most :data:`MAX_LABELS`), and the ids left out (unknown, hidden or of another class)."""
    wanted = list(dict.fromkeys(entity_id for entity_id in ids if entity_id))[:MAX_LABELS]
    names = visible_names(actor, wanted)
    codes = barcodes_of(list(names))
    labels, skipped = [], []
    for entity_id in wanted:
        found = names.get(entity_id)
        if found is None or found[0] not in LABEL_CLASSES:
            skipped.append(entity_id)
            continue
        code = codes.get(entity_id) or entity_id
        labels.append(Label(entity_id, found[0], found[1], code, code128_svg(code),
                            qr_svg(code)))
    return labels, skipped
