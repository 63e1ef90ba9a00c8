"""The real OpenID Connect provider of the tests (``provider/provider.js``, npm
``oidc-provider``) as a process on 127.0.0.1, and what a test does at it over HTTP: register a
client, sign in as one of its accounts.

The accounts (claims in ``provider.js``): ``alice`` (department ``chemistry``, groups
``lab-managers`` and ``staff``), ``bob`` (department ``unknown-unit``, group ``staff``),
``mallory`` (claims the username ``admin``) and ``odd`` (a username labapp cannot hold).
"""
from __future__ import annotations

import fcntl
import os
import re
import shutil
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import requests
from werkzeug.test import TestResponse

PROVIDER_DIR = Path(__file__).with_name("provider")
STARTUP_SECONDS = 30


def installed_provider() -> Path:
    """The provider script, its npm packages installed from the committed lock file when they
    are not yet there (under a file lock: test processes of both passes may ask at once, and
    two ``npm ci`` in one folder delete each other's files)."""
    npm = shutil.which("npm")
    assert npm is not None, "npm is missing (apt-get install -y nodejs npm)"
    with (PROVIDER_DIR / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (PROVIDER_DIR / "node_modules" / "oidc-provider").is_dir():
            subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=PROVIDER_DIR,
                           check=True, capture_output=True, timeout=300)
    return PROVIDER_DIR / "provider.js"


def free_port() -> int:
    """A port nothing listens on now (the kernel's pick)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def running_provider(clock_offset_seconds: int = 0) -> Iterator[str]:
    """Start the provider; yields its issuer URL once its discovery document answers."""
    script = installed_provider()
    node = shutil.which("node")
    assert node is not None, "node is missing (apt-get install -y nodejs)"
    port = free_port()
    environment = {**os.environ, "LABAPP_OIDC_CLOCK_OFFSET_SECONDS": str(clock_offset_seconds)}
    process = subprocess.Popen([node, str(script), str(port)], cwd=PROVIDER_DIR,
                               env=environment, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None
        # The script prints one line once it listens; reading it waits for exactly that.
        line = process.stdout.readline()
        assert line.startswith("listening "), f"the provider did not start: {line!r}"
        issuer = line.split(" ", 1)[1].strip()
        discovery = requests.get(f"{issuer}/.well-known/openid-configuration", timeout=10)
        assert discovery.status_code == 200 and discovery.json()["issuer"] == issuer
        yield issuer
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


@dataclass(frozen=True)
class Client:
    client_id: str
    client_secret: str


def register_client(issuer: str, redirect_uris: list[str],
                    post_logout_redirect_uris: list[str] | None = None) -> Client:
    """A new confidential client at the provider (Dynamic Client Registration)."""
    response = requests.post(f"{issuer}/reg", timeout=10, json={
        "redirect_uris": redirect_uris,
        "post_logout_redirect_uris": post_logout_redirect_uris or [],
        "grant_types": ["authorization_code"], "response_types": ["code"],
        "token_endpoint_auth_method": "client_secret_basic"})
    assert response.status_code == 201, response.text
    body = response.json()
    return Client(body["client_id"], body["client_secret"])


def sign_in_at_provider(browser: requests.Session, authorization_url: str, account: str,
                        stop_at: str) -> str:
    """Follow ``authorization_url`` at the provider, sign in as ``account`` on its page, and
    return the redirect back to the application (the first Location starting ``stop_at``)."""
    page = browser.get(authorization_url, timeout=10)
    assert page.status_code == 200, page.text
    action = re.search(r'action="(/interaction/[^"]+/login)"', page.text)
    assert action is not None, page.text
    origin = re.match(r"https?://[^/]+", page.url)
    assert origin is not None
    response = browser.post(origin.group(0) + action.group(1), data={"login": account},
                            allow_redirects=False, timeout=10)
    while True:
        assert response.status_code in (302, 303), response.text
        location = response.headers["Location"]
        if location.startswith(stop_at):
            return location
        response = browser.get(location if location.startswith("http")
                               else origin.group(0) + location,
                               allow_redirects=False, timeout=10)


def authorization_url(app_response: TestResponse) -> str:
    """The provider address a ``/login/oidc/<name>`` response sends the browser to."""
    assert app_response.status_code == 302, app_response.get_data(as_text=True)
    return app_response.headers["Location"]
