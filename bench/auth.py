"""Issue 9 §4: the cost of Basic ``username:password``, on a real gunicorn server.

Per backend, a fresh database (``flask init``) with users whose passwords carry the
production Argon2id parameters, served by ``make run``'s two gunicorn workers twice: with the
Basic memory off (``LABAPP_BASIC_AUTH_CACHE_SECONDS=0``: every call verifies the password,
the cost before a cache hit) and on (the default). On each server:

1. latency: ``GET /api/entity/Sample?$top=50`` with Basic ``username:password`` against the
   same request with the user's PAT (the baseline), interleaved, p50 of each;
2. throughput: 16 Basic clients against 8 Bearer clients (the baseline), each client
   alternating that read with a ``POST /api/entity`` of 50 Samples for a fixed time, run in
   halves in the order Bearer, Basic, Basic, Bearer: requests/s, p50, p99, max and any 5xx;
3. (memory on only) ``/healthz`` against an anonymous ``GET /api/auth/user``, interleaved;
   and, in this process, what reading the migration scripts costs (what every ``/healthz``
   paid before the heads were read once).

Results are ratios against the baselines of the same run; absolute times move with the load
of the (shared, 2-core) machine, which also runs the clients.
"""
from __future__ import annotations

import http.client
import json
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from alembic.config import Config
from alembic.script import ScriptDirectory

from bench.harness import new_database
from bench.query import percentile
from bench.server import WORKERS, Server, basic, bearer, gunicorn, request
from labapp import create_app
from labapp.access.actor import Actor
from labapp.auth import pats
from labapp.db import db, transaction
from labapp.users.service import create_user

TOPIC, TITLE = "basic-auth", "The cost of Basic authentication (issue 9)"
PASSWORD = "password-of-the-auth-benchmark"
SECRET_KEY = "secret-key-of-the-auth-benchmark"
SCRIPT_USER = "bench-script"
READ = "/api/entity/Sample?$top=50"
ROUNDS = 40
WARMUP = 6
BASIC_CLIENTS = 16
BEARER_CLIENTS = 8
SECONDS = 15.0
MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"
# Targets: a remembered Basic call costs what a PAT call costs; 16 Basic clients get the
# throughput of 8 Bearer clients; /healthz costs what a trivial request costs.
HIT_RATIO_TARGET = 1.25
THROUGHPUT_TARGET = 0.8
HEALTHZ_RATIO_TARGET = 1.5


@dataclass
class Load:
    """One concurrency run: ``clients`` threads for ``seconds``."""

    clients: int
    seconds: float
    times: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)

    def merged(self, other: Load) -> Load:
        """This run and ``other`` (the same clients) as one."""
        statuses = dict(self.statuses)
        for status, count in other.statuses.items():
            statuses[status] = statuses.get(status, 0) + count
        return Load(self.clients, self.seconds + other.seconds, self.times + other.times,
                    statuses)

    @property
    def rate(self) -> float:
        return len(self.times) / self.seconds

    @property
    def server_errors(self) -> int:
        """5xx answers and failed connections (status 0)."""
        return sum(count for status, count in self.statuses.items()
                   if status >= 500 or status == 0)


@dataclass
class ServerRun:
    cache_seconds: int
    basic: list[float]
    pat: list[float]
    basic_load: Load
    bearer_load: Load
    healthz: list[float] = field(default_factory=list)
    trivial: list[float] = field(default_factory=list)

    @property
    def latency_ratio(self) -> float:
        return statistics.median(self.basic) / statistics.median(self.pat)

    @property
    def throughput_ratio(self) -> float:
        return self.basic_load.rate / self.bearer_load.rate


@dataclass
class AuthResult:
    backend: str
    runs: list[ServerRun]
    seconds: float
    script_reads: list[float]


def _users() -> tuple[list[str], list[str]]:
    return ([f"bench-basic-{n}" for n in range(BASIC_CLIENTS)],
            [f"bench-bearer-{n}" for n in range(BEARER_CLIENTS)])


def _prepare(instance: Path, url: str) -> str:
    """Initialise the database and create the users; answers the script user's PAT."""
    app = create_app({"INSTANCE_PATH": str(instance), "DATABASE_URL": url,
                      "SECRET_KEY": SECRET_KEY, "ADMIN_PASSWORD": PASSWORD})
    try:
        result = app.test_cli_runner().invoke(args=["init"])
        if result.exit_code != 0:
            raise RuntimeError(f"flask init failed:\n{result.output}")
        basic_users, bearer_users = _users()
        with app.app_context(), transaction():
            for username in (SCRIPT_USER, *basic_users, *bearer_users):
                create_user(username=username, name=username, department_id="DEP00001",
                            password=PASSWORD, created_by="admin")
            return pats.create(Actor(user_id=SCRIPT_USER), "benchmark", None).value
    finally:
        with app.app_context():
            db.session.remove()
            db.engine.dispose()


def _timed(server: Server, method: str, path: str, headers: dict[str, str],
           body: object = None) -> tuple[float, int]:
    connection = server.connection()
    start = time.perf_counter()
    status, _ = request(connection, method, path, headers, body)
    elapsed = time.perf_counter() - start
    connection.close()
    return elapsed, status


def _interleaved(server: Server, first: tuple[str, dict[str, str]],
                 second: tuple[str, dict[str, str]]) -> tuple[list[float], list[float]]:
    """Alternate two GETs, ``WARMUP`` untimed rounds then ``ROUNDS`` timed ones."""
    times: tuple[list[float], list[float]] = ([], [])
    for number in range(WARMUP + ROUNDS):
        for index, (path, headers) in enumerate((first, second)):
            elapsed, status = _timed(server, "GET", path, headers)
            if status != 200:
                raise RuntimeError(f"GET {path} answered {status}")
            if number >= WARMUP:
                times[index].append(elapsed)
    return times


def _write_body(client: int, number: int) -> dict[str, object]:
    return {"entities": [{"eClass": "Sample", "name": f"auth-{client}-{number}-{row}"}
                         for row in range(50)]}


def _load(server: Server, headers: list[dict[str, str]], seconds: float) -> Load:
    """Each client alternates the read and a 50-row write until ``seconds`` have passed,
    after ``WARMUP`` untimed reads (a script's first call to each worker is measured apart:
    the memory-off server shows what every call would cost)."""
    load = Load(len(headers), seconds)
    lock = threading.Lock()
    deadline: list[float] = []
    # The clock starts when the last client has warmed up.
    start = threading.Barrier(len(headers),
                              action=lambda: deadline.append(time.monotonic() + seconds))

    def client(index: int) -> None:
        connection = server.connection()
        for _ in range(WARMUP):  # untimed: each worker sees the credentials once first
            request(connection, "GET", READ, headers[index])
        start.wait()
        number = 0
        while time.monotonic() < deadline[0]:
            began = time.perf_counter()
            try:
                if number % 2:
                    status, _ = request(connection, "POST", "/api/entity", headers[index],
                                        _write_body(index, number))
                else:
                    status, _ = request(connection, "GET", READ, headers[index])
            except (OSError, http.client.HTTPException):
                status = 0  # counted apart: the connection failed
                connection.close()
            elapsed = time.perf_counter() - began
            with lock:
                load.times.append(elapsed)
                load.statuses[status] = load.statuses.get(status, 0) + 1
            number += 1
        connection.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(len(headers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return load


def _serve(url: str, instance: Path, pat: str, cache_seconds: int, seconds: float,
           log) -> ServerRun:
    environment = {"LABAPP_INSTANCE_PATH": str(instance), "LABAPP_DATABASE_URL": url,
                   "LABAPP_SECRET_KEY": SECRET_KEY,
                   "LABAPP_BASIC_AUTH_CACHE_SECONDS": str(cache_seconds)}
    with gunicorn(environment) as server:
        basic_times, pat_times = _interleaved(server, (READ, basic(SCRIPT_USER, PASSWORD)),
                                              (READ, basic(SCRIPT_USER, pat)))
        basic_users, bearer_users = _users()
        tokens = []
        for username in bearer_users:
            status, body = request(server.connection(), "POST", "/api/auth/login",
                                   body={"username": username, "password": PASSWORD})
            if status != 200:
                raise RuntimeError(f"login of {username}: {status} {body[:200]!r}")
            tokens.append(bearer(json.loads(body)["accessToken"]))
        # The writes grow the table every read counts, so the later run would be the slower:
        # Bearer, Basic, Basic, Bearer in halves gives both the same growth on average.
        basics = [basic(u, PASSWORD) for u in basic_users]
        bearer_first = _load(server, tokens, seconds / 2)
        basic_load = _load(server, basics, seconds / 2).merged(
            _load(server, basics, seconds / 2))
        bearer_load = bearer_first.merged(_load(server, tokens, seconds / 2))
        run = ServerRun(cache_seconds, basic_times, pat_times, basic_load, bearer_load)
        if cache_seconds:
            run.healthz, run.trivial = _interleaved(server, ("/healthz", {}),
                                                    ("/api/auth/user", {}))
    log(f"  memory {cache_seconds} s: Basic/PAT p50 {run.latency_ratio:.2f}x, "
        f"{BASIC_CLIENTS} Basic {basic_load.rate:.1f} req/s vs {BEARER_CLIENTS} Bearer "
        f"{bearer_load.rate:.1f} req/s")
    return run


def run(backend: str, seconds: float = SECONDS, log=print) -> AuthResult:
    started = time.perf_counter()
    log(f"[{backend}] auth: fresh database, users with production Argon2id ...")
    with tempfile.TemporaryDirectory(prefix="labapp-bench-auth-") as tmp:
        instance = Path(tmp) / "instance"
        with new_database(instance, backend, prefix="labapp_bench", durable=True) as url:
            pat = _prepare(instance, url)
            runs = [_serve(url, instance, pat, cache, seconds, log) for cache in (0, 300)]
    return AuthResult(backend, runs, time.perf_counter() - started, _script_reads())


def _script_reads() -> list[float]:
    """Seconds of reading the migration scripts' heads, as ``/healthz`` did on every call."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        ScriptDirectory.from_config(config).get_heads()
        times.append(time.perf_counter() - start)
    return times


# --- the report ----------------------------------------------------------------------------

def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f} ms"


def _verdict(ok: bool) -> str:
    return "**PASS**" if ok else "**FAIL**"


def _load_cells(load: Load) -> str:
    return (f"{load.rate:.1f} req/s | {_ms(percentile(load.times, 50))} "
            f"| {_ms(percentile(load.times, 99))} | {_ms(max(load.times))} "
            f"| {load.server_errors}")


def render(results: list[AuthResult], facts: list[str]) -> str:
    out = [*facts, "",
           f"`bench/auth.py`: a gunicorn server ({WORKERS} sync workers) on a fresh database, "
           "users with the production Argon2id parameters; served with the Basic memory off "
           "(`LABAPP_BASIC_AUTH_CACHE_SECONDS=0`, every call verifies: the cost before a cache "
           "hit) and on (300 s). Latency: `GET " + READ + f"`, {ROUNDS} interleaved rounds "
           f"after {WARMUP} warm-ups, Basic password vs the same user's PAT. Load: "
           f"{BASIC_CLIENTS} Basic clients vs {BEARER_CLIENTS} Bearer clients, each "
           "alternating that read with a `POST /api/entity` of 50 Samples, "
           f"{results[0].runs[0].basic_load.seconds:.0f} s each, in halves ordered Bearer, "
           "Basic, Basic, Bearer (the writes grow the table each read counts). `/healthz` vs "
           "anonymous `GET /api/auth/user`, interleaved. Clients and server share the machine.", "",
           "| Backend | Measure | Value | Baseline | Ratio | Target | Result |",
           "|---|---|---:|---:|---:|---|---|"]
    for r in results:
        off, on = r.runs
        out.append(f"| {r.backend} | Basic p50, memory off (before a hit) "
                   f"| {_ms(statistics.median(off.basic))} | PAT {_ms(statistics.median(off.pat))} "
                   f"| {off.latency_ratio:.2f}× | – (the cost of Argon2) | – |")
        out.append(f"| {r.backend} | Basic p50, memory on (hits) "
                   f"| {_ms(statistics.median(on.basic))} | PAT {_ms(statistics.median(on.pat))} "
                   f"| {on.latency_ratio:.2f}× | ≤ {HIT_RATIO_TARGET}× "
                   f"| {_verdict(on.latency_ratio <= HIT_RATIO_TARGET)} |")
        for run_, label in ((off, "memory off"), (on, "memory on")):
            ok = run_.throughput_ratio >= THROUGHPUT_TARGET and not (
                run_.basic_load.server_errors or run_.bearer_load.server_errors)
            target = f"≥ {THROUGHPUT_TARGET}×, no 5xx" if run_ is on else "– (no 5xx)"
            verdict = _verdict(ok) if run_ is on else _verdict(
                not run_.basic_load.server_errors)
            out.append(f"| {r.backend} | {BASIC_CLIENTS} Basic clients, {label} "
                       f"| {run_.basic_load.rate:.1f} req/s | {BEARER_CLIENTS} Bearer "
                       f"{run_.bearer_load.rate:.1f} req/s | {run_.throughput_ratio:.2f}× "
                       f"| {target} | {verdict} |")
        ratio = statistics.median(on.healthz) / statistics.median(on.trivial)
        out.append(f"| {r.backend} | `/healthz` p50 | {_ms(statistics.median(on.healthz))} "
                   f"| `/api/auth/user` {_ms(statistics.median(on.trivial))} | {ratio:.2f}× "
                   f"| ≤ {HEALTHZ_RATIO_TARGET}× | {_verdict(ratio <= HEALTHZ_RATIO_TARGET)} |")
        out.append(f"| {r.backend} | reading the migration scripts (each `/healthz` before) "
                   f"| {_ms(statistics.median(r.script_reads))} | `/healthz` now "
                   f"{_ms(statistics.median(on.healthz))} "
                   f"| {statistics.median(r.script_reads) / statistics.median(on.healthz):.2f}× "
                   "| – (saved per call) | – |")
    out.append("")
    for r in results:
        out += [f"### {r.backend} (issue 9, {r.seconds:.0f} s)", "",
                "| Server | Clients | Throughput | p50 | p99 | max | 5xx or no answer |",
                "|---|---|---:|---:|---:|---:|---:|"]
        for run_ in r.runs:
            label = f"memory {'on' if run_.cache_seconds else 'off'}"
            out.append(f"| {label} | {BASIC_CLIENTS} Basic | {_load_cells(run_.basic_load)} |")
            out.append(f"| {label} | {BEARER_CLIENTS} Bearer "
                       f"| {_load_cells(run_.bearer_load)} |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def summary(results: list[AuthResult]) -> list[str]:
    """Issue 9's targets, one line per target and database."""
    lines = []
    for r in results:
        off, on = r.runs
        throughput_ok = on.throughput_ratio >= THROUGHPUT_TARGET and not (
            on.basic_load.server_errors or on.bearer_load.server_errors)
        healthz = statistics.median(on.healthz) / statistics.median(on.trivial)
        lines += [
            f"{r.backend}: remembered Basic p50 {_ms(statistics.median(on.basic))} against PAT "
            f"{_ms(statistics.median(on.pat))} = {on.latency_ratio:.2f}× (target ≤ "
            f"{HIT_RATIO_TARGET}×; memory off {off.latency_ratio:.2f}×): "
            f"{_word(on.latency_ratio <= HIT_RATIO_TARGET)}",
            f"{r.backend}: {BASIC_CLIENTS} Basic clients {on.basic_load.rate:.1f} req/s against "
            f"{BEARER_CLIENTS} Bearer {on.bearer_load.rate:.1f} req/s = "
            f"{on.throughput_ratio:.2f}× (target ≥ {THROUGHPUT_TARGET}×, no 5xx; memory off "
            f"{off.throughput_ratio:.2f}×): {_word(throughput_ok)}",
            f"{r.backend}: `/healthz` p50 {_ms(statistics.median(on.healthz))} against "
            f"`/api/auth/user` {_ms(statistics.median(on.trivial))} = {healthz:.2f}× (target ≤ "
            f"{HEALTHZ_RATIO_TARGET}×): {_word(healthz <= HEALTHZ_RATIO_TARGET)}",
        ]
    return lines


def _word(ok: bool) -> str:
    return "PASS" if ok else "FAIL"
