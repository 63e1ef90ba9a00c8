"""Slot positions of a grid location: ``A1`` … ``H12`` (row letters, column number).

Rows are lettered A … Z, then AA, AB … (as spreadsheets do); columns are numbered from 1.
A position is stored in its canonical spelling: upper case, no leading zeros (``b07`` is
``B7``).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

# A position as clients may spell it; the OpenAPI document publishes it anchored.
POSITION = re.compile(r"([A-Za-z]{1,3})0*([1-9][0-9]{0,3})")


def row_label(row: int) -> str:
    """The letters of a 0-based row index (0 → ``A``, 26 → ``AA``)."""
    label = ""
    row += 1
    while row:
        row, rest = divmod(row - 1, 26)
        label = chr(ord("A") + rest) + label
    return label


def _row_index(letters: str) -> int:
    index = 0
    for letter in letters.upper():
        index = index * 26 + (ord(letter) - ord("A") + 1)
    return index - 1


def parse(text: str) -> tuple[int, int] | None:
    """``(row, column)``, both 0-based, of a position; None when it is not one."""
    match = POSITION.fullmatch(text.strip())
    if match is None:
        return None
    return _row_index(match[1]), int(match[2]) - 1


def label(row: int, column: int) -> str:
    """The canonical position of a 0-based cell."""
    return f"{row_label(row)}{column + 1}"


def canonical(text: str, rows: int, columns: int) -> str | None:
    """The canonical spelling of ``text`` when it names a cell of a ``rows`` × ``columns``
    grid; None otherwise."""
    cell = parse(text)
    if cell is None or not (0 <= cell[0] < rows and 0 <= cell[1] < columns):
        return None
    return label(*cell)


def cells(rows: int, columns: int) -> Iterator[str]:
    """Every position of the grid in filling order: row by row, left to right."""
    for row in range(rows):
        for column in range(columns):
            yield label(row, column)


def free_cells(rows: int, columns: int, taken: Iterable[str]) -> Iterator[str]:
    """The free positions of the grid in filling order."""
    occupied = set(taken)
    return (cell for cell in cells(rows, columns) if cell not in occupied)
