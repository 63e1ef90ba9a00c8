"""The verdict of the search backends bench (the run itself is not part of ``make test``)."""
from __future__ import annotations

from bench.search import Latency
from bench.search_backends import BackendRun, render, summary


def _run(name: str, entities: int, rebuild: float, p95s: dict[str, float],
         on: float, off: float) -> BackendRun:
    run = BackendRun(name, entities, seed_seconds=1.0, rebuild_seconds=rebuild,
                     drain_rate=1000.0, changed=10, rate_on=on, rate_off=off,
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
