"""Which processes run jobs (``labapp.liveness``): a lock file each (on PostgreSQL an advisory
lock and a row), held while the process lives and dropped by the kernel (the database
server) when it dies, ``kill -9`` included; probing it never takes the lock from its
holder, and a worker that stops removes its file (its row)."""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest
from flask import Flask

from labapp import advisory, liveness
from labapp.db import db
from tests.conftest import BACKEND
from tests.helpers.processes import held_lock, killed, recorded_locks


@pytest.fixture
def instance_app(fresh_app: Callable[..., Flask]) -> Iterator[Flask]:
    """An application inside its context."""
    app = fresh_app(initialised=True)
    with app.app_context():
        yield app


def test_a_killed_process_is_gone_at_once(instance_app: Flask) -> None:
    with held_lock(instance_app) as (process_id, process):
        parsed = liveness.ProcessId.parse(process_id)
        assert parsed is not None
        assert (parsed.role, parsed.host, parsed.pid) == (
            "worker", liveness.host_name(), process.pid)
        assert liveness.state(process_id) == liveness.ALIVE
        assert liveness.alive() == [parsed]
        killed(process)
        assert liveness.state(process_id) == liveness.GONE
        assert liveness.alive() == []
        assert recorded_locks(instance_app) == [process_id]
        assert liveness.sweep(keep={process_id}) == 0, "a file a job names is kept"
        assert liveness.sweep() == 1
        assert recorded_locks(instance_app) == []
        assert liveness.state(process_id) == liveness.GONE, "no trace of this host: gone"


def test_probes_at_once_never_take_a_live_lock(instance_app: Flask) -> None:
    with held_lock(instance_app) as (process_id, _process):
        states: list[str] = []
        start = threading.Barrier(8)

        def probe() -> None:
            with instance_app.app_context():
                start.wait(timeout=30)
                states.extend(liveness.state(process_id) for _ in range(200))

        probers = [threading.Thread(target=probe) for _ in range(8)]
        for prober in probers:
            prober.start()
        for prober in probers:
            prober.join(timeout=60)
        assert states == [liveness.ALIVE] * 1600
        assert liveness.sweep() == 0


def test_only_workers_count_as_workers(instance_app: Flask) -> None:
    with held_lock(instance_app, liveness.IMPORT) as (process_id, _process):
        assert liveness.state(process_id) == liveness.ALIVE
        assert liveness.alive() == [] and liveness.alive(liveness.IMPORT) != []


def test_what_cannot_be_probed_is_unknown(instance_app: Flask) -> None:
    elsewhere = "worker_other-host.example_4242_0123456789ab"
    # Every host's locks are the database's on PostgreSQL: another host's process is told.
    told = liveness.GONE if BACKEND == "postgresql" else liveness.UNKNOWN
    assert liveness.state(elsewhere) == told
    assert liveness.state(f"worker_{liveness.host_name()}_4242_0123456789ab") == liveness.GONE
    for malformed in (None, "", "worker_../../etc_1_0123456789ab", "worker_host_1",
                      "someone_host_1_0123456789ab", "worker_host_x_0123456789ab"):
        assert liveness.state(malformed) == liveness.UNKNOWN


def test_the_worker_loop_holds_its_lock_and_removes_it(instance_app: Flask) -> None:
    with liveness.holding() as worker:
        assert liveness.own_id() == str(worker)
        assert liveness.state(str(worker)) == liveness.ALIVE
        assert liveness.alive() == [worker]
    assert recorded_locks(instance_app) == []
    assert liveness.state(str(worker)) == liveness.GONE
    own = liveness.own_id()
    assert own.startswith("import_") and liveness.own_id() == own
    assert liveness.state(own) == liveness.ALIVE and liveness.alive() == []


def test_threads_claiming_at_once_share_one_lock(instance_app: Flask) -> None:
    start = threading.Barrier(8)
    ids: list[str] = []

    def claim() -> None:
        with instance_app.app_context():
            start.wait(timeout=30)
            ids.append(liveness.own_id())

    claimers = [threading.Thread(target=claim) for _ in range(8)]
    for claimer in claimers:
        claimer.start()
    for claimer in claimers:
        claimer.join(timeout=60)
    assert len(ids) == 8 and len(set(ids)) == 1
    assert liveness.state(ids[0]) == liveness.ALIVE
    assert recorded_locks(instance_app) == [ids[0]]


@pytest.mark.skipif(BACKEND != "postgresql", reason="PostgreSQL's advisory locks")
def test_a_released_advisory_lock_is_free_at_once(instance_app: Flask) -> None:
    """Released, a lock is free for the next probe and the next taker at once: closing its
    connection alone left the server a moment to end the session, in which the lock still
    showed as held (an export refused right after another had finished)."""
    with instance_app.app_context():
        engine = db.engine
    lock_key = advisory.key("released at once")
    for _ in range(20):
        held = advisory.take(engine, advisory.EXPORT, lock_key)
        assert held is not None
        held.release()
        assert not advisory.is_held(engine, advisory.EXPORT, lock_key)
