"""Where a benchmark run goes: its whole output into a dated file of its own under
``bench/runs/``, and its verdict onto ``bench/RESULTS.md``, the page of current verdicts.

The page is written by hand, except for blocks between markers that runs rewrite: per
benchmark (a *topic*), the verdict of its newest run with the machine it ran on; and at the
end, the list of every run file. A run of a topic that has no block yet gets a section of
its own before that list. ``python -m bench.results`` rewrites the list alone, for run
files added by hand.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path

RUNS_FOLDER = "runs"
PAGE = Path(__file__).resolve().parent / "RESULTS.md"
LIST_BEGIN = ("<!-- bench: list of runs begins; every run (and `python -m bench.results`) "
              "rewrites it -->")
LIST_END = "<!-- bench: list of runs ends -->"
RUN_NAME = re.compile(r"^(\d{4}-\d{2}-\d{2})-([a-z0-9]+(?:-[a-z0-9]+)*)\.md$")
# The facts of machine_facts that say when, how and on what a run ran.
MACHINE_FACTS = ("- Date:", "- CPU:", "- Load average", "- Speed reference:")


@dataclass(frozen=True)
class Run:
    """One run of one benchmark, as it is published."""

    topic: str  # a short kebab-case name: the run file's name and the page's block
    title: str  # the benchmark in words, e.g. "Search (issue 10)"
    facts: list[str]  # bench.report.machine_facts of the run
    verdict: list[str]  # one line per target and database: figure, target, ratio, verdict
    output: str  # the whole generated report


def newest_markers(topic: str) -> tuple[str, str]:
    """The markers around the verdict of ``topic``'s newest run on the page."""
    return (f"<!-- bench: newest {topic} run begins; its next run rewrites this block -->",
            f"<!-- bench: newest {topic} run ends -->")


def run_path(folder: Path, topic: str, day: date) -> Path:
    """A name no run has taken yet: ``<day>-<topic>.md``, then ``-2``, ``-3`` … the same day."""
    path, number = folder / f"{day.isoformat()}-{topic}.md", 1
    while path.exists():
        number += 1
        path = folder / f"{day.isoformat()}-{topic}-{number}.md"
    return path


def run_text(run: Run, day: date) -> str:
    """The run file: its title and date, its verdict, then everything the run reported."""
    return "\n".join([f"# {run.title}: run of {day.isoformat()}", "", "## Verdict", "",
                      *(f"- {line.strip()}" for line in run.verdict), "", "## Output", "",
                      run.output.strip(), ""])


def newest_block(run: Run, run_file: Path, page: Path) -> str:
    """What the page says of the newest run of ``run.topic``: a link, the machine, the verdict."""
    begin, end = newest_markers(run.topic)
    link = run_file.relative_to(page.parent).as_posix()
    machine = [fact for fact in run.facts if fact.startswith(MACHINE_FACTS)]
    return "\n".join([begin, f"Newest run: [{run_file.stem}]({link})", "", *machine, "",
                      "Its verdict:", "", *(f"- {line.strip()}" for line in run.verdict),
                      end])


def run_list(page: Path) -> str:
    """The list of every run file beside ``page``, newest first, each with its title."""
    folder = page.parent / RUNS_FOLDER
    named = ((RUN_NAME.match(path.name), path)
             for path in (folder.glob("*.md") if folder.is_dir() else ()))
    files = sorted(((_order(*match.groups()), path) for match, path in named if match),
                   reverse=True)
    lines = [LIST_BEGIN]
    for _, path in files:
        first = path.read_text(encoding="utf-8").split("\n", 1)[0].removeprefix("# ").strip()
        lines.append(f"- [{path.stem}]({path.relative_to(page.parent).as_posix()}): {first}")
    return "\n".join([*lines, LIST_END])


def _order(day: str, rest: str) -> tuple[str, str, int]:
    """Day, topic and the number of the day's run (``-2``, ``-3`` …; 1 without one)."""
    repeat = re.fullmatch(r"(.+)-(\d+)", rest)
    return (day, repeat[1], int(repeat[2])) if repeat else (day, rest, 1)


def _replace(text: str, begin: str, end: str, block: str) -> str | None:
    """``text`` with the block between ``begin`` and ``end`` replaced, or None without one."""
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.DOTALL)
    if not pattern.search(text):
        return None
    return pattern.sub(lambda _match: block, text, count=1)


def with_run_list(text: str, page: Path) -> str:
    """``text`` of the page with its list of runs rewritten (added at the end if missing)."""
    listed = run_list(page)
    replaced = _replace(text, LIST_BEGIN, LIST_END, listed)
    if replaced is not None:
        return replaced
    return f"{text.rstrip()}\n\n## Every run\n\n{listed}\n"


def with_newest(text: str, run: Run, block: str) -> str:
    """``text`` of the page with the newest-run block of ``run.topic`` replaced, or a section
    of its own added before the list of runs."""
    replaced = _replace(text, *newest_markers(run.topic), block)
    if replaced is not None:
        return replaced
    section = f"## {run.title}\n\n{block}\n\n"
    heading = text.find("\n## Every run")
    at = text.find(LIST_BEGIN) if heading < 0 else heading + 1
    if at < 0:
        return f"{text.rstrip()}\n\n{section}"
    return text[:at] + section + text[at:]


def publish(page: Path, run: Run, now: datetime | None = None) -> Path:
    """Write ``run`` into a new file under ``runs/`` beside ``page`` and update ``page``
    (created if missing) from it; return the run's file."""
    day = (now or datetime.now(UTC)).date()
    folder = page.parent / RUNS_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    run_file = run_path(folder, run.topic, day)
    run_file.write_text(run_text(run, day), encoding="utf-8")
    text = page.read_text(encoding="utf-8") if page.exists() else "# Benchmark results\n"
    text = with_newest(text, run, newest_block(run, run_file, page))
    page.write_text(with_run_list(text, page), encoding="utf-8")
    return run_file


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.results [PAGE]``: relink every run file on the page."""
    arguments = sys.argv[1:] if argv is None else argv
    page = Path(arguments[0]) if arguments else PAGE
    page.write_text(with_run_list(page.read_text(encoding="utf-8"), page), encoding="utf-8")
    print(f"{page}: every file of {page.parent / RUNS_FOLDER} listed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
