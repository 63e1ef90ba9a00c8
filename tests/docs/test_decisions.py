"""``docs/decisions/``: one file per decision, each in the house form and on the index.

Every file has a title, a status and the three parts (context, decision, consequences); a
status names only files that exist; and the index (``README.md``) lists every file once,
under its area, with the title and status the file itself gives, so a newcomer reading the
index reads the rules in force. Links between the files lead somewhere.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

FOLDER = Path(__file__).resolve().parents[2] / "docs" / "decisions"
INDEX = FOLDER / "README.md"
SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*\.md")
FILE = r"([a-z0-9]+(?:-[a-z0-9]+)*\.md)"
STATUS = re.compile(r"in force \(issues? [^)]+\)"
                    rf"|superseded by {FILE} \(issues? [^)]+\)"
                    rf"|amended by {FILE}((?:, {FILE})*)")
PARTS = ["## Context", "## Decision", "## Consequences"]
LISTED = re.compile(r"^- \[(?P<title>.+)\]\((?P<file>[^)]+)\) — (?P<status>.+)$")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _decisions() -> list[Path]:
    return sorted(path for path in FOLDER.glob("*.md") if path != INDEX)


def _head(path: Path) -> tuple[str, str]:
    """A decision's title and status, from its first two lines."""
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[0].startswith("# ") and lines[0][2:].strip(), f"{path.name}: no title"
    assert lines[1].startswith("Status: "), f"{path.name}: the second line is not its status"
    return lines[0][2:].strip(), lines[1].removeprefix("Status: ").strip()


def _index() -> list[re.Match[str]]:
    return [match for line in INDEX.read_text(encoding="utf-8").split("\n")
            if (match := LISTED.match(line))]


def test_there_are_decisions_and_an_index() -> None:
    assert INDEX.is_file()
    assert len(_decisions()) > 100


@pytest.mark.parametrize("path", _decisions(), ids=lambda path: path.name)
def test_a_decision_has_the_house_form(path: Path) -> None:
    assert SLUG.fullmatch(path.name), f"{path.name}: not a short kebab-case name"
    _, status = _head(path)
    assert STATUS.fullmatch(status), f"{path.name}: status {status!r} is none of the forms"
    text = path.read_text(encoding="utf-8")
    headings = re.findall(r"^## .*$", text, flags=re.MULTILINE)
    assert headings == PARTS, f"{path.name}: parts {headings}, expected {PARTS}"
    for part, following in zip(PARTS, [*PARTS[1:], None], strict=True):
        body = text.split(part + "\n", 1)[1]
        body = body.split(following + "\n", 1)[0] if following else body
        assert body.strip(), f"{path.name}: {part} is empty"


@pytest.mark.parametrize("path", _decisions(), ids=lambda path: path.name)
def test_a_status_names_files_that_exist(path: Path) -> None:
    _, status = _head(path)
    for name in re.findall(FILE, status):
        assert name != path.name, f"{path.name} names itself in its status"
        assert (FOLDER / name).is_file(), f"{path.name}: its status names {name}, not a file"


def test_the_index_lists_every_decision_once_with_its_own_title_and_status() -> None:
    listed = _index()
    files = [match["file"] for match in listed]
    assert len(files) == len(set(files)), "a decision is listed twice"
    missing = {path.name for path in _decisions()} - set(files)
    assert not missing, f"not on the index: {sorted(missing)}"
    for match in listed:
        path = FOLDER / match["file"]
        assert path.is_file(), f"the index lists {match['file']}, which does not exist"
        title, status = _head(path)
        assert (match["title"], match["status"]) == (title, status), (
            f"{match['file']}: the index says {match['title']!r} — {match['status']!r}, "
            f"the file {title!r} — {status!r}")


def test_the_index_groups_the_decisions_by_area() -> None:
    text = INDEX.read_text(encoding="utf-8")
    areas = re.split(r"^## ", text, flags=re.MULTILINE)[1:]
    assert len(areas) >= 5
    assert all(LISTED.search(area.split("\n", 1)[1].strip().split("\n")[0])
               for area in areas), "an area with no decision under its heading"


@pytest.mark.parametrize("path", [*_decisions(), INDEX], ids=lambda path: path.name)
def test_links_lead_to_files(path: Path) -> None:
    prose = re.sub(r"`[^`]*`", "", path.read_text(encoding="utf-8"))  # code is no link
    for target in LINK.findall(prose):
        if "://" in target:
            continue
        assert (path.parent / target).exists(), f"{path.name} links {target}, which is missing"
