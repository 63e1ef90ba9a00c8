"""A man in the middle between the application and the provider's token endpoint, for the
tests of answers that must be refused: it serves the provider's discovery document with its
own token endpoint, passes every token response through a mutation the test chooses (swap
the ID token for another, alter its payload), and forwards everything else unchanged."""
from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import requests

from tests.helpers.serving import serving_in_thread

TokenMutation = Callable[[dict[str, Any]], dict[str, Any]]
DISCOVERY_PATH = "/.well-known/openid-configuration"


@dataclass
class TokenProxy:
    """``discovery_url`` for the application's settings; set ``mutate`` before the sign-in."""

    issuer: str
    base_url: str = ""
    mutate: TokenMutation = field(default=lambda token: token)

    @property
    def discovery_url(self) -> str:
        return self.base_url + DISCOVERY_PATH


def _handler(proxy: TokenProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            """Quiet: the test reports what matters."""

        def _answer(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802
            upstream = requests.get(proxy.issuer + self.path, timeout=10)
            body = upstream.content
            if self.path == DISCOVERY_PATH:
                metadata = upstream.json()
                metadata["token_endpoint"] = proxy.base_url + "/token"
                body = json.dumps(metadata).encode()
            self._answer(upstream.status_code, body, upstream.headers["Content-Type"])

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length", "0"))
            headers = {name: self.headers[name] for name in ("Authorization", "Content-Type")
                       if self.headers[name]}
            upstream = requests.post(proxy.issuer + self.path, data=self.rfile.read(length),
                                     headers=headers, timeout=10)
            body = upstream.content
            if self.path == "/token" and upstream.status_code == 200:
                body = json.dumps(proxy.mutate(upstream.json())).encode()
            self._answer(upstream.status_code, body, upstream.headers["Content-Type"])

    return Handler


@contextmanager
def token_proxy(issuer: str) -> Iterator[TokenProxy]:
    """A running proxy in front of ``issuer``."""
    proxy = TokenProxy(issuer)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(proxy))
    proxy.base_url = f"http://127.0.0.1:{server.server_port}"
    with serving_in_thread(server, "token-proxy"):
        yield proxy
