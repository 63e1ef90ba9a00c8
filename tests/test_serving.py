"""The processes that serve freeze their start-up objects out of garbage collection: each
gunicorn worker (``labapp.serving.post_worker_init``, the settings module ``make run``
passes) and the background worker (``flask --app labapp worker``), before they serve."""
from __future__ import annotations

import gc
import logging
import os
import signal
from collections.abc import Callable, Iterator
from types import SimpleNamespace

import pytest
from flask import Flask

from labapp import serving, worker
from labapp.worker import worker_command


@pytest.fixture
def unfrozen() -> Iterator[None]:
    """Gives the test process's objects back to the collector afterwards."""
    gc.unfreeze()
    try:
        yield
    finally:
        gc.unfreeze()


def test_each_gunicorn_worker_freezes_what_loading_the_app_made(
        fresh_app: Callable[..., Flask], unfrozen: None,
        caplog: pytest.LogCaptureFixture) -> None:
    app = fresh_app()  # what gunicorn's worker has loaded before it calls the hook
    caplog.set_level(logging.INFO, logger="gunicorn-worker")
    serving.post_worker_init(SimpleNamespace(wsgi=app, pid=os.getpid(),
                                             log=logging.getLogger("gunicorn-worker")))
    assert gc.get_freeze_count() > 10_000
    assert "start-up objects frozen" in caplog.text


def test_the_background_worker_freezes_before_its_first_upkeep(
        fresh_app: Callable[..., Flask], unfrozen: None,
        monkeypatch: pytest.MonkeyPatch) -> None:
    frozen_at_upkeep: list[int] = []
    monkeypatch.setattr(worker, "run", lambda stop: frozen_at_upkeep.append(
        gc.get_freeze_count()))
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        result = fresh_app().test_cli_runner().invoke(worker_command)
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    assert result.exit_code == 0, result.output
    assert frozen_at_upkeep and frozen_at_upkeep[0] > 10_000
    assert f"{frozen_at_upkeep[0]:,} start-up objects frozen" in result.output
