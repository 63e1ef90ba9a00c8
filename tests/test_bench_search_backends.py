"""The verdict of the search backends bench (the run itself is not part of ``make test``)."""
from __future__ import annotations

from bench.search import Latency
from bench.search_backends import BackendRun, BulkRound, render, summary


def _bulk(on: float, off: float, queued: float) -> BulkRound:
    """A round of two 500-entity batches per state at these rates (entities/s)."""
    return BulkRound({"on": [500 / on] * 2, "off": [500 / off] * 2,
                      "off, queued": [500 / queued] * 2})


def _run(name: str, entities: int, rebuild: float, p95s: dict[str, float],
         on: float, off: float) -> BackendRun:
    run = BackendRun(name, entities, seed_seconds=1.0, rebuild_seconds=rebuild,
                     drain_rate=1000.0, changed=10, bulk=[_bulk(on, off, off * 0.9)],
                     fresh=[0.01, 0.02])
    run.api = {kind: Latency([p95] * 20) for kind, p95 in p95s.items()}
    return run


def test_targets_are_judged_at_a_million_by_projection_and_whoosh_wins_are_named() -> None:
    whoosh = _run("whoosh", 100_000, 80.0, {"like (name part)": 0.010, "phrase": 0.020,
                                             "2-char prefix": 0.030}, 900, 1000)
    postgres = _run("postgresql", 100_000, 31.0, {"like (name part)": 0.020, "phrase": 0.010,
                                                  "2-char prefix": 0.120}, 700, 1000)
    lines = summary([whoosh, postgres])
    rebuild = next(line for line in lines if "rebuild of 10^6" in line)
    assert "310 s" in rebuild and rebuild.endswith("FAIL")  # 31 s at 10^5, ×10
    assert any("postgresql backend: worst p95 120.0 ms" in line and "FAIL" in line
               and "2-char prefix 120.0 ms" in line for line in lines)
    assert any("postgresql backend: bulk create" in line and "70%" in line
               and line.endswith("FAIL") for line in lines)
    assert any("whoosh backend: bulk create" in line and line.endswith("PASS") for line in lines)
    faster = lines[-1]
    assert "2-char prefix" in faster and "bulk create ratio 90% against 70%" in faster
    assert "like" not in faster  # answered in SQL, never by a backend
    assert "phrase" not in faster
    assert "| 2-char prefix |" in render([whoosh, postgres], ["- facts"])


def test_bulk_create_is_judged_against_no_search_work_with_each_round_shown() -> None:
    """The ratio is on against off with no search work over every round's batches; each
    round's ratio is shown, and the earlier off (queue triggers kept) beside it. A bulk-only
    run (no queries) judges the bulk create alone."""
    run = BackendRun("postgresql", 100_000, rebuild_seconds=20.0,
                     bulk=[_bulk(600, 1000, 800), _bulk(1200, 1000, 1000)])
    (rebuild, bulk) = summary([run])
    assert rebuild.startswith("postgresql backend: rebuild of 10^6")
    assert "800/s indexing on against 1,000/s off (no search work) = 80%" in bulk
    assert "2 rounds of 2 batches per state: 60%, 120%" in bulk
    assert "against 889/s off with the queue triggers kept (earlier runs' off) 90%" in bulk
    assert bulk.endswith("(target ≥ 80%): PASS")
    page = render([run], ["- facts"])
    assert "800 / 1,000 / 889 per s = 80%" in page and "| 60%, 120% |" in page
    assert "freshness" not in page and "latency" not in page
