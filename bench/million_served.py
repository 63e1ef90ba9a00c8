"""The parts of ``python -m bench --million`` served by gunicorn: the OData export with the
worker's memory, and the soak (:mod:`bench.soak`) on the million database."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bench import dashboards, million_seed, odata, soak, soak_seed
from bench.harness import READER, READER_PASSWORD, Bench
from bench.server import basic, gunicorn, request
from labapp.db import db


@dataclass
class OdataFigures:
    api_seconds: float
    core_seconds: float
    rows: int
    pages: int
    rss_before: int = 0  # bytes, the gunicorn worker after a warm-up request
    rss_peak: int = 0    # bytes, its peak while the whole feed is read over HTTP

    @property
    def share(self) -> float:
        """The OData rate as a share of Core + JSON's (target ≥ 50%)."""
        return self.core_seconds / self.api_seconds


def odata_export(bench: Bench, log: Callable[[str], None]) -> OdataFigures:
    """The reader's samples exported through ``@odata.nextLink`` against one Core select +
    JSON, twice each, alternating; the faster of each."""
    api, core, rows, pages = [], [], 0, 0
    for _ in range(2):
        export = odata.in_process(bench)
        api.append(export.seconds)
        rows, pages = export.rows, len(export.pages)
        seconds, count = odata.core_export(bench.engine, bench.department, bench.backend)
        core.append(seconds)
        if count != rows:
            raise RuntimeError(f"OData exported {rows} rows, Core {count}")
    figures = OdataFigures(min(api), min(core), rows, pages)
    with gunicorn(server_environment(bench), workers=1) as server:
        assert server.pid is not None
        request(server.connection(), "GET", f"{odata.FEED}?$top=10",
                basic(READER, READER_PASSWORD))  # the password is verified once
        with odata.RssSampler(server.pid) as sampler:
            figures.rss_before = sampler.peak
            odata.over_http(server, sampler)
        figures.rss_peak = sampler.peak
    log(f"  [{bench.backend}] OData export of {rows:,} rows: {figures.api_seconds:.1f} s, "
        f"Core {figures.core_seconds:.1f} s ({figures.share:.0%})")
    return figures


def server_environment(bench: Bench) -> dict[str, str]:
    """What gunicorn needs to serve the bench's database and search index."""
    settings = bench.app.config["LABAPP"]
    return {"LABAPP_DATABASE_URL": settings["DATABASE_URL"],
            "LABAPP_INSTANCE_PATH": settings["INSTANCE_PATH"],
            "LABAPP_SECRET_KEY": settings["SECRET_KEY"]}


def million_soak(bench: Bench, entities: int, minutes: float,
                 log: Callable[[str], None]) -> soak.SoakResult:
    """gunicorn and the background worker on the million database under mixed load."""
    board = bench.client.post("/api/dashboard", headers=bench.reader_headers,
                              json={"name": "Soak", "widgets": dashboards.WIDGETS})
    if board.status_code != 201:
        raise RuntimeError(f"dashboard not created: {board.get_data()[:300]!r}")
    visible = entities // million_seed.READER_SHARE
    targets = soak.SoakTargets(
        reader=soak_seed._pat(bench, READER), writer=soak_seed._pat(bench, "admin"),
        department=bench.department,
        sample_ids=tuple(million_seed.sample_id(million_seed.reader_sample(k))
                         for k in range(0, visible, max(1, visible // 5000))),
        box=million_seed.box_id(0), dashboard=board.get_json()["id"],
        widgets=len(dashboards.WIDGETS))
    with bench.app.app_context():
        db.engine.dispose()  # the server's processes hold the connections from here
    return soak.run_soak(server_environment(bench), minutes, targets, log)
