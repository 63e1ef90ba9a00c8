"""``bench/RESULTS.md`` and ``bench/runs/``: the page of current verdicts links every dated
run, and a run published by the benchmarks lands in a file of its own and on the page.

The publishing tests write into a temporary folder, as ``python -m bench --output`` does.
"""
from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bench import (
    auth,
    dashboards,
    export,
    imports,
    million_report,
    odata,
    readlock,
    report,
    request_cost,
    search,
    storage,
    sync,
)
from bench.results import LIST_BEGIN, LIST_END, PAGE, RUN_NAME, Run, main, newest_markers, publish

RUNS = PAGE.parent / "runs"
TOPICS = [(report.TOPIC, report.TITLE), (report.QUERY_TOPIC, report.QUERY_TITLE),
          *((module.TOPIC, module.TITLE) for module in (
              auth, search, storage, dashboards, odata, sync, readlock, export, imports,
              million_report, request_cost))]
DAY = datetime(2026, 11, 28, 9, 30, tzinfo=UTC)
FACTS = ["- Date: 2026-11-28 09:30 UTC; command: `python -m bench --search-only`",
         "- CPU: 2 × AMD EPYC; RAM: 24 GiB",
         "- Load average (1/5/15 min) at start 1.0/1.0/1.0, at end 1.2/1.1/1.0 (other processes "
         "share the machine)",
         "- Python 3.11.7, SQLAlchemy 2.1.9, Flask 3.1.3",
         "- Speed reference: 280 ms for the fixed work of `bench.report.speed_reference`"]


def _links(text: str) -> set[str]:
    return set(re.findall(r"\]\((runs/[^)]+)\)", text))


def test_every_run_file_is_named_by_date_and_topic_and_linked_from_the_page() -> None:
    text = PAGE.read_text(encoding="utf-8")
    files = sorted(RUNS.glob("*"))
    assert files, "no run under bench/runs/"
    for path in files:
        assert RUN_NAME.match(path.name), f"{path.name}: not <YYYY-MM-DD>-<topic>.md"
        assert f"runs/{path.name}" in _links(text), f"{path.name} is not linked from RESULTS.md"
    for link in _links(text):
        assert (PAGE.parent / link).is_file(), f"RESULTS.md links {link}, which is missing"


def test_every_run_file_starts_with_its_title() -> None:
    for path in RUNS.glob("*.md"):
        first = path.read_text(encoding="utf-8").split("\n", 1)[0]
        assert first.startswith("# ") and len(first) > 10, f"{path.name}: no title"


@pytest.mark.parametrize(("topic", "title"), TOPICS)
def test_every_benchmark_has_its_block_on_the_page(topic: str, title: str) -> None:
    """A run replaces its topic's block in place; a block that went missing would make the
    next run add a second section of the same benchmark."""
    assert re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", topic)
    assert title
    text = PAGE.read_text(encoding="utf-8")
    begin, end = newest_markers(topic)
    assert text.count(begin) == 1 and text.count(end) == 1, f"no block of {topic}"
    block = text.split(begin, 1)[1].split(end, 1)[0]
    newest = re.search(r"Newest run: \[[^]]+\]\((runs/[^)]+)\)", block)
    assert newest and (PAGE.parent / newest[1]).is_file()


def test_the_topics_are_distinct() -> None:
    topics = [topic for topic, _ in TOPICS]
    assert len(topics) == len(set(topics))


def _page(folder: Path, *sections: str) -> Path:
    page = folder / "RESULTS.md"
    page.write_text("\n\n".join(["# Benchmark results", "Written by hand.", *sections,
                                 "## Every run", f"{LIST_BEGIN}\n{LIST_END}"]) + "\n",
                    encoding="utf-8")
    return page


def _run(verdict: str = "sqlite: worst p95 41.1 ms (target p95 < 50 ms): PASS") -> Run:
    return Run(search.TOPIC, search.TITLE, FACTS, [verdict],
               "- facts\n\n### sqlite, 100,000 Samples\n\n| kind | API |\n|---|---|\n")


def test_a_run_gets_a_file_of_its_own_and_rewrites_its_block(tmp_path: Path) -> None:
    begin, end = newest_markers("search")
    page = _page(tmp_path, "## Search (issue 10)", "What it measures.",
                 f"{begin}\nthe old verdict\n{end}", "A note by hand.")

    written = publish(page, _run(), DAY)

    assert written == tmp_path / "runs" / "2026-11-28-search.md"
    run_text = written.read_text(encoding="utf-8")
    assert run_text.startswith("# Search (issue 10): run of 2026-11-28\n")
    assert "- sqlite: worst p95 41.1 ms (target p95 < 50 ms): PASS" in run_text
    assert "### sqlite, 100,000 Samples" in run_text
    text = page.read_text(encoding="utf-8")
    assert "the old verdict" not in text
    block = text.split(begin, 1)[1].split(end, 1)[0]
    assert "Newest run: [2026-11-28-search](runs/2026-11-28-search.md)" in block
    assert FACTS[0] in block and FACTS[4] in block and FACTS[3] not in block
    assert "- sqlite: worst p95 41.1 ms (target p95 < 50 ms): PASS" in block
    assert "Written by hand." in text and "A note by hand." in text
    listed = text.split(LIST_BEGIN, 1)[1].split(LIST_END, 1)[0]
    assert "- [2026-11-28-search](runs/2026-11-28-search.md): Search (issue 10): run of " \
           "2026-11-28" in listed


def test_a_second_run_the_same_day_is_numbered_and_becomes_the_newest(tmp_path: Path) -> None:
    page = _page(tmp_path)
    publish(page, _run("first: PASS"), DAY)
    second = publish(page, _run("second: FAIL"), DAY)

    assert second.name == "2026-11-28-search-2.md"
    assert (tmp_path / "runs" / "2026-11-28-search.md").read_text().count("first: PASS") == 1
    text = page.read_text(encoding="utf-8")
    assert "second: FAIL" in text and "first: PASS" not in text
    assert text.count(newest_markers("search")[0]) == 1
    listed = text.split(LIST_BEGIN, 1)[1]
    assert listed.index("2026-11-28-search-2.md") < listed.index("2026-11-28-search.md")


def test_a_benchmark_without_a_block_gets_a_section_before_the_list(tmp_path: Path) -> None:
    page = _page(tmp_path, "## Another benchmark", "By hand.")

    publish(page, _run(), DAY)

    text = page.read_text(encoding="utf-8")
    assert text.index("## Another benchmark") < text.index("## Search (issue 10)") \
        < text.index(newest_markers("search")[0]) < text.index("## Every run")


def test_a_missing_page_is_made(tmp_path: Path) -> None:
    page = tmp_path / "out" / "verdicts.md"
    page.parent.mkdir()

    written = publish(page, _run(), DAY)

    text = page.read_text(encoding="utf-8")
    assert text.startswith("# Benchmark results\n")
    assert f"runs/{written.name}" in _links(text) and LIST_BEGIN in text


def test_run_files_added_by_hand_are_listed_by_the_command(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    page = _page(tmp_path)
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "2026-11-28-cost.md").write_text("# The fixed cost of a request\n")
    (tmp_path / "runs" / "notes.txt").write_text("not a run\n")

    assert main([str(page)]) == 0

    text = page.read_text(encoding="utf-8")
    assert "- [2026-11-28-cost](runs/2026-11-28-cost.md): The fixed cost of a request" in text
    assert "notes.txt" not in text
    assert "listed" in capsys.readouterr().out


def test_the_speed_reference_is_measured() -> None:
    seconds = report.speed_reference(rounds=1)
    assert 0 < seconds < 60
