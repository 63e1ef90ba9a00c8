"""What an uploaded spreadsheet may be, and the refusal of one that is not.

Every limit bounds the memory or time that reading a file costs before its rows are read,
so that a small hostile upload cannot take a request or the worker down; each is refused
with an :class:`ImportRejected` (400 ``import_rejected``) naming the limit in a lab user's
words. What each limit keeps bounded (measured with openpyxl 3.1, Python 3.11):

Any file
    ``MAX_ROWS`` data rows (the plan keeps an outcome per row); ``MAX_COLUMNS`` named
    columns of at most ``MAX_HEADER_LENGTH`` characters each (headers are stored with the
    job's mapping and shown on every page of the wizard).
CSV
    ``MAX_CELL_LENGTH`` characters in a cell (Excel's own limit), ``MAX_ROW_LENGTH``
    characters in a row, header included: Python's csv module reads a whole row into memory,
    so a row is refused as soon as it grows past the limit, before it is parsed.
XLSX, every XML part
    No DOCTYPE (entity expansion, external entities), UTF-8 only, no CDATA, and no more
    than ``MAX_TEXT_RUN`` bytes between two tags (a cell's text, an attribute list).
XLSX, the parts openpyxl parses whole (workbook, styles, relationships, properties...)
    ``MAX_PART_SIZE`` bytes and ``MAX_PART_ELEMENTS`` elements each: an element costs
    0.5-1.5 KiB once parsed (openpyxl's style objects are the heaviest).
XLSX, sheets
    openpyxl streams a sheet but keeps what lies outside its rows and a record of every
    row with attributes (~500 bytes each): ``MAX_SHEET_ROWS`` row elements in any sheet
    (Excel's own maximum), ``MAX_ROWS`` + 1 in the imported one; ``MAX_ITEM_ELEMENTS``
    elements in one row (four per cell of Excel's 16,384 columns); ``MAX_OUTSIDE_ELEMENTS``
    elements outside the rows (hyperlinks, formatting rules, column widths).
XLSX, shared strings
    openpyxl holds the whole table, ~150 bytes a string plus its text: at most
    ``MAX_SHARED_STRINGS`` strings in a part of at most ``MAX_SHARED_STRINGS_SIZE`` bytes
    (about 90 MiB at both limits).
XLSX, the archive
    ``MAX_UNCOMPRESSED`` bytes unpacked, ``MAX_MEMBERS`` parts, and no part over
    ``RATIO_FROM`` bytes compressed more than ``MAX_RATIO`` to 1 (a zip bomb: sheet XML
    compresses 5-30 to 1, deflate's ceiling is about 1,000 to 1).

The limits are constants, not settings: they protect the processes, and a file over one
has a way out that a setting would not give (split it, or save the sheet as CSV).
"""
from __future__ import annotations

from labapp.errors import InvalidInput

MAX_ROWS = 200_000
MAX_COLUMNS = 1_000
MAX_HEADER_LENGTH = 255
MAX_CELL_LENGTH = 32_767
MAX_ROW_LENGTH = 2**20

MAX_UNCOMPRESSED = 512 * 2**20
MAX_MEMBERS = 10_000
RATIO_FROM = 16 * 2**20
MAX_RATIO = 200

MAX_TEXT_RUN = 256 * 2**10
MAX_PART_SIZE = 8 * 2**20
MAX_PART_ELEMENTS = 100_000
MAX_SHEET_ROWS = 1_048_576
SPREADSHEET_COLUMNS = 16_384
MAX_ITEM_ELEMENTS = 4 * SPREADSHEET_COLUMNS
MAX_OUTSIDE_ELEMENTS = 100_000
MAX_SHARED_STRINGS = 400_000
MAX_SHARED_STRINGS_SIZE = 32 * 2**20


class ImportRejected(InvalidInput):
    """The file cannot be imported at all; the message says why."""

    code = "import_rejected"
