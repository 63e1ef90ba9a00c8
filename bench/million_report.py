"""The report of ``python -m bench --million``: its verdict and everything it measured."""
from __future__ import annotations

from bench.million import MillionResult
from bench.report import _verdict

TOPIC, TITLE = "million", "A million samples (issue 24)"
REBUILD_TARGET = 600.0
FRESH_TARGET = 2.0
DASHBOARD_TARGET = 0.300
ODATA_SHARE = 0.5


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f}"


def _met(ok: bool) -> str:
    return "met" if ok else "**MISSED**"


def _measures(r: MillionResult) -> list[str]:
    lines = ["| request | API p50 / p95 ms | Core p50 / p95 ms | API ÷ Core (p50) | "
             "target p95 | verdict | full GCs in the runs |", "|---|---|---|---|---|---|---|"]
    for m in r.measures:
        core = f"{_ms(m.p(50, True))} / {_ms(m.p(95, True))}" if m.core else "—"
        ratio = f"{m.ratio:.2f}×" if m.core else "—"
        target = f"< {m.target * 1000:.0f} ms" if m.target else "—"
        name = f"{m.name} ({m.note})" if m.note else m.name
        collections = (f"{len(m.collections)}, longest {_ms(max(m.collections))} ms"
                       if m.collections else "0")
        lines.append(f"| {name} | {_ms(m.p(50))} / {_ms(m.p(95))} | {core} | {ratio} | "
                     f"{target} | {_verdict(m.ok)} | {collections} |")
    return lines


def _search(r: MillionResult) -> list[str]:
    references = list(r.search_references)
    lines = ["| kind | API (reader) p50 / p95 / max ms | "
             + " | ".join(f"{name} p50 / p95 / max ms" for name in references) + " |",
             "|---" * (2 + len(references)) + "|"]
    for m in r.measures:
        if not m.name.startswith("search: "):
            continue
        kind = m.name.removeprefix("search: ")
        cells = [r.search_references[name].get(kind) for name in references]
        lines.append(f"| {kind} | {_ms(m.p(50))} / {_ms(m.p(95))} / {_ms(max(m.api))} | "
                     + " | ".join(cell.row() if cell else "—" for cell in cells) + " |")
    return lines


def _dashboard(r: MillionResult) -> list[str]:
    d = r.dashboard
    if d is None:
        return []
    widgets = ", ".join(f"{w.plugin} {_ms(w.p95)} ms ({w.ratio:.1f}× Core)" for w in d.widgets)
    return [f"- Dashboard of 8 widgets (the page and its 8 widget requests, as the browser "
            f"loads them): p95 {_ms(d.page_p95)} ms against Core's aggregates "
            f"{_ms(sorted(d.page_core_runs)[len(d.page_core_runs) // 2])} ms (median) — "
            f"target < 300 ms: {_met(d.page_p95 < DASHBOARD_TARGET)}. Each widget's p95: "
            f"{widgets}."]


def _odata(r: MillionResult) -> list[str]:
    o = r.odata
    if o is None:
        return []
    return [f"- OData export of the reader's {o.rows:,} samples ({o.pages} pages through "
            f"`@odata.nextLink`): {o.api_seconds:.1f} s against one Core select + JSON "
            f"{o.core_seconds:.1f} s = {o.share:.0%} of Core's rate — target ≥ 50%: "
            f"{_met(o.share >= ODATA_SHARE)}."
            + (f" Served by gunicorn over HTTP: worker RSS {o.rss_before / 2**20:.0f} MiB "
               f"before, peak {o.rss_peak / 2**20:.0f} MiB during the export."
               if getattr(o, "rss_peak", None) else "")]


def _plans(r: MillionResult) -> list[str]:
    lines: list[str] = []
    for m in r.measures:
        if not m.plans:
            continue
        lines += ["", f"#### Plans of a miss: {m.name} ({r.backend})", ""]
        for statement, plan in m.plans:
            lines += ["```", statement[:400], "", plan, "```"]
    return lines


def backend_block(r: MillionResult) -> list[str]:
    seed = ", ".join(f"{part} {seconds:,.0f} s" for part, seconds in r.seed_seconds.items())
    rate = r.rebuilt / r.rebuild_seconds if r.rebuild_seconds else 0.0
    lines = [f"### {r.backend}, {r.entities:,} Samples ({r.seconds / 60:.0f} min in all)", "",
             f"- Seed through Core: {seed} ({r.entities / r.seed_seconds.get('samples', 1):,.0f}"
             f" samples/s, the database's triggers included).",
             f"- Search rebuild: {r.rebuilt:,} documents in {r.rebuild_seconds:,.0f} s "
             f"({rate:,.0f}/s) — target < 10 min: {_met(r.rebuild_seconds < REBUILD_TARGET)}."
             + "".join(f" {name}: {value:,.0f} documents/s." for name, value
                       in r.search_rates.items())]
    if r.drain_rate is not None:
        lines.append(f"- Incremental indexing (queue drain): {r.drain_rate:,.0f} documents/s "
                     f"— target ≥ 2,000/s: {_met(r.drain_rate >= 2000)}.")
    if r.fresh:
        lines.append(f"- Freshness (worker running; a 500-entity POST returned → all "
                     f"searchable): {', '.join(f'{f * 1000:,.0f} ms' for f in r.fresh)} — "
                     f"target < 2 s: {_met(max(r.fresh) < FRESH_TARGET)}.")
    if r.deep:
        lines.append("- Deep pages against the first (p50; target ≤ 2×): " + "; ".join(
            f"{name}: {ratio:.2f}× ({_met(ok)})" for name, ratio, ok in r.deep) + ".")
    lines += _dashboard(r) + _odata(r)
    if r.soak is not None:
        lines += ["", r.soak.render()]
    lines += ["", *_measures(r), "", "Search, API against the reference engines over the "
              "same documents (30 runs after 3 warm-ups; max includes the first, cold run):",
              "", *_search(r), *_plans(r), ""]
    return lines


def render(results: list[MillionResult], facts: list[str]) -> str:
    lines = [*facts, ""]
    for r in results:
        lines += backend_block(r)
    return "\n".join(lines) + "\n"


def summary(results: list[MillionResult]) -> list[str]:
    """The rebuild and how many request targets each database met, naming the misses."""
    lines = []
    for r in results:
        misses = [m.name for m in r.measures if not m.ok]
        lines.append(f"{r.backend}: rebuild {r.rebuild_seconds:,.0f} s, "
                     f"{len(r.measures) - len(misses)} of {len(r.measures)} p95 targets met"
                     + (f"; missed: {', '.join(misses)}" if misses else ""))
    return lines
