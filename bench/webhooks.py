"""Issue 36 §3: webhook delivery throughput, deliveries per second to a local receiver.

On a database of its own, ``--changes`` samples are created through the API (one change
each) while ``--subscriptions`` webhooks of the admin follow the log; then the delivery
lane (:func:`labapp.webhooks.delivery.upkeep`, as the worker's ``webhooks`` lane runs it)
is run until it finds no work, and the deliveries a receiver on 127.0.0.1 (answering
``204`` at once) got are counted: deliveries per second over the whole drain, and the
median time of one attempt as the delivery log recorded it, and the SQL statements the lane
ran per delivery (a figure the machine's load does not change). One lane delivers one message
per subscription at a time, so this is the ceiling a fast receiver sees.

Run: ``python -m bench.webhooks [--changes 2000] [--subscriptions 1] [--backend
sqlite|postgresql]``.
"""
from __future__ import annotations

import argparse
import http.server
import statistics
import threading
import time
from typing import Any

from sqlalchemy import event, select

from bench.harness import open_bench
from labapp.db import db
from labapp.model import WebhookDelivery
from labapp.webhooks import delivery

BATCH = 200


class _Counter:
    def __init__(self) -> None:
        self.count = 0
        self.lock = threading.Lock()


def _receiver(counter: _Counter) -> http.server.ThreadingHTTPServer:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with counter.lock:
                counter.count += 1
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    return server


def run(backend: str, changes: int, subscriptions: int) -> dict[str, float]:
    counter = _Counter()
    server = _receiver(counter)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        # The worker indexes for search in its own lane: the delivery lane's commits leave
        # the search queue alone, as they do beside a running worker.
        with open_bench(backend, {"WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8",
                                  "SEARCH_DRAIN": "before-search"}) as bench:
            url = f"http://127.0.0.1:{server.server_port}/hook"
            for number in range(subscriptions):
                made = bench.client.post("/api/webhook", headers=bench.admin_headers, json={
                    "name": f"Bench {number}", "url": url, "eClasses": ["Sample"]})
                assert made.status_code == 201, made.get_json()
            for base in range(0, changes, BATCH):
                created = bench.client.post("/api/entity", headers=bench.admin_headers, json={
                    "entities": [{"eClass": "Sample", "name": f"W-{number:06d}",
                                  "departmentID": bench.department}
                                 for number in range(base, min(base + BATCH, changes))]})
                assert created.status_code == 201, created.get_json()
            statements = [0]

            def count(*_args: Any) -> None:
                statements[0] += 1

            event.listen(bench.engine, "before_cursor_execute", count)
            started = time.perf_counter()
            with bench.app.app_context():
                while delivery.upkeep():
                    pass
                elapsed = time.perf_counter() - started
                event.remove(bench.engine, "before_cursor_execute", count)
                durations = list(db.session.scalars(select(WebhookDelivery.duration_ms)))
                db.session.remove()
    finally:
        server.shutdown()
        server.server_close()
    expected = changes * subscriptions
    if counter.count != expected:
        raise RuntimeError(f"the receiver got {counter.count} deliveries, not {expected}")
    return {"deliveries": counter.count, "seconds": elapsed,
            "per_second": counter.count / elapsed,
            "attempt_ms_median": statistics.median(durations) if durations else 0.0,
            "statements_per_delivery": statements[0] / max(counter.count, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=2000)
    parser.add_argument("--subscriptions", type=int, default=1)
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    arguments = parser.parse_args()
    result = run(arguments.backend, arguments.changes, arguments.subscriptions)
    print(f"webhooks ({arguments.backend}, {arguments.changes} changes × "
          f"{arguments.subscriptions} subscription(s)): {result['deliveries']:,} deliveries "
          f"in {result['seconds']:.1f} s = {result['per_second']:.0f} deliveries/s; "
          f"median attempt {result['attempt_ms_median']:.1f} ms; "
          f"{result['statements_per_delivery']:.1f} SQL statements per delivery")


if __name__ == "__main__":
    main()
