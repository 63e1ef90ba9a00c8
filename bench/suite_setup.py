"""The test suite's cost of one initialised database (issue 33 §4): ``flask init`` on a new
database, as ``fresh_app()`` + ``run_init`` did per test, against a copy of a template that
init made once, as ``fresh_app(initialised=True)`` does now (an SQLite file copy,
``CREATE DATABASE … TEMPLATE`` on PostgreSQL, the search index folder beside it).

Both are measured in turns, round after round, in one process, so other processes on the
machine weigh on both alike. ``python -m bench.suite_setup [ROUNDS]``.
"""
from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from argon2 import PasswordHasher

from bench.report import machine_facts
from bench.results import PAGE, Run, publish
from labapp.auth import secrets as password_secrets
from labapp.search.indexer import index_path
from tests.conftest import build_app, dispose, run_init
from tests.databases import BACKENDS, new_database, settle

TOPIC = "suite-setup"
TITLE = "Test suite: one initialised database, by flask init or by a template copy (issue 33)"
# The copy is worth its fixture when it costs at most this share of init (both include making
# the application, which neither way avoids).
TARGET_SHARE = 0.5


def by_init(directory: Path, backend: str) -> float:
    """Seconds to make an application on a new database and run ``flask init`` on it."""
    started = time.perf_counter()
    with new_database(directory, backend) as url:
        app = build_app(directory, url)
        run_init(app)
        took = time.perf_counter() - started
        dispose(app)
    return took


def by_copy(directory: Path, backend: str, template_url: str, template_index: Path) -> float:
    """Seconds to make an application on a copy of the template database and index."""
    started = time.perf_counter()
    with new_database(directory, backend, template=template_url) as url:
        app = build_app(directory, url)
        with app.app_context():
            shutil.copytree(template_index, index_path())
        took = time.perf_counter() - started
        dispose(app)
    return took


def measure(backend: str, rounds: int, scratch: Path) -> dict[str, list[float]]:
    """Per round, the seconds of one database by init and one by copy."""
    with ExitStack() as cleanup:
        template = scratch / f"{backend}-template"
        url = cleanup.enter_context(new_database(template, backend, prefix="labapp_template"))
        app = build_app(template, url)
        run_init(app)
        with app.app_context():
            template_index = index_path()
        dispose(app)
        settle(url)
        times: dict[str, list[float]] = {"init": [], "copy": []}
        for number in range(rounds):
            times["init"].append(by_init(scratch / f"{backend}-init-{number}", backend))
            times["copy"].append(by_copy(scratch / f"{backend}-copy-{number}", backend, url,
                                         template_index))
        return times


def main(argv: list[str]) -> int:
    rounds = int(argv[0]) if argv else 10
    load_before = os.getloadavg()
    password_secrets.hasher = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
    lines, verdict = [], []
    median: Callable[[list[float]], float] = statistics.median
    with tempfile.TemporaryDirectory() as scratch:
        for backend in BACKENDS:
            times = measure(backend, rounds, Path(scratch))
            init, copy = median(times["init"]), median(times["copy"])
            lines.append(f"{backend}: {rounds} rounds; init median {init * 1000:,.0f} ms "
                         f"(min {min(times['init']) * 1000:,.0f}, max "
                         f"{max(times['init']) * 1000:,.0f}); copy median {copy * 1000:,.0f} ms "
                         f"(min {min(times['copy']) * 1000:,.0f}, max "
                         f"{max(times['copy']) * 1000:,.0f})")
            ok = copy <= init * TARGET_SHARE
            verdict.append(f"{backend}: a template copy {copy * 1000:,.0f} ms against init "
                           f"{init * 1000:,.0f} ms (median of {rounds}, ratio "
                           f"{copy / init:.2f}); target ≤ {TARGET_SHARE:.2f} of init: "
                           f"{'**PASS**' if ok else '**FAIL**'}")
    facts = machine_facts([], "suite_setup", (load_before, os.getloadavg()))
    output = "\n".join(["```", *lines, "```"])
    print("\n".join([*facts, *verdict, output]))
    written = publish(PAGE, Run(TOPIC, TITLE, facts, verdict, output))
    print(f"written to {written}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
