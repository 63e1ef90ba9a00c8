"""The update helper: only allowed names, only what differs is set, the diff is returned."""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from labapp.changes import update

ATTRIBUTES = {"name": "name", "minDigits": "min_digits"}


@dataclass
class Row:
    name: str = "old"
    min_digits: int = 5


def test_what_differs_is_set_and_returned_as_old_new() -> None:
    row = Row()
    assert update(row, {"name": "new", "minDigits": 5}, ATTRIBUTES) == {"name": ("old", "new")}
    assert row == Row(name="new", min_digits=5)


def test_a_name_outside_the_allow_list_changes_nothing() -> None:
    row = Row()
    with pytest.raises(ValueError, match="passwordHash"):
        update(row, {"name": "new", "passwordHash": "x"}, ATTRIBUTES)
    assert row == Row()
