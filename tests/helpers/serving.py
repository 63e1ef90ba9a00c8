"""HTTP servers of the tests, run in a thread of the test process."""
from __future__ import annotations

import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# How often a serving thread looks whether it is asked to stop. socketserver's default (0.5 s)
# was most of the teardown of every test with a server: shutdown() waits for that look.
STOP_POLL_SECONDS = 0.02


@contextmanager
def serving_in_thread(server: socketserver.BaseServer, name: str) -> Iterator[None]:
    """Serve ``server`` in a thread named ``name`` while the block runs; then stop it, wait
    for the thread and close the server's socket."""
    thread = threading.Thread(target=server.serve_forever, name=name,
                              kwargs={"poll_interval": STOP_POLL_SECONDS})
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        thread.join()
        server.server_close()
