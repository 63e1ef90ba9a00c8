"""``write_whole``: the target holds the old content or the new, and a failed write leaves
neither a changed target nor a staging file behind."""
from __future__ import annotations

from pathlib import Path

import pytest

from labapp.atomic import write_whole


def test_the_new_content_replaces_the_old_whole(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    target.write_text("old", encoding="utf-8")
    write_whole(target, "new ✓")
    assert target.read_text(encoding="utf-8") == "new ✓"
    assert [path.name for path in tmp_path.iterdir()] == ["state.json"]


def test_a_failed_write_leaves_the_target_and_no_staging_file(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    target.write_text("old", encoding="utf-8")
    with pytest.raises(UnicodeEncodeError):
        write_whole(target, "\udc80")  # a lone surrogate cannot be written as UTF-8
    assert target.read_text(encoding="utf-8") == "old"
    assert [path.name for path in tmp_path.iterdir()] == ["state.json"]
