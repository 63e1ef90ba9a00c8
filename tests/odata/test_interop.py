"""Real OData clients, installed from the registries, against a live server: python-odata
(reflecting ``$metadata``), the npm ``@odata/client`` run by Node, and a replay of the URLs an
Excel / Power BI ``OData.Feed`` session sends. The lab is in :mod:`tests.odata.live`."""
from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
import requests
from flask import Flask
from odata import ODataService

from tests.odata.live import IVY_BATCHES, PAGE_SIZE, PASSWORD, USERNAME, LiveFeed, live_feed

NODE_DIR = Path(__file__).with_name("node")


@pytest.fixture
def feed(fresh_app: Callable[..., Flask]) -> Iterator[LiveFeed]:
    yield from live_feed(fresh_app)


def _session(username: str, secret: str) -> requests.Session:
    session = requests.Session()
    session.auth = (username, secret)
    return session


@pytest.mark.parametrize("secret", ["password", "pat"])
def test_python_odata_reflects_metadata_and_pages_through_a_filtered_view(
        feed: LiveFeed, secret: str) -> None:
    session = _session(USERNAME, PASSWORD if secret == "password" else feed.pat)
    pages: list[str] = []
    session.hooks["response"].append(lambda response, *args, **kwargs: pages.append(
        response.url))
    with session:
        service = ODataService(f"{feed.base_url}/odata/", session=session,
                               reflect_entities=True, quiet_progress=True)
        sample = service.entities["Sample"]
        query = service.query(sample).filter(sample.name.startswith("Batch"))
        rows = list(query.order_by(sample.name.asc()))
    assert [row.name for row in rows] == IVY_BATCHES  # never the admin's Batch-A … E
    assert all(row.departmentID == feed.department for row in rows)
    feed_pages = [url for url in pages if "/odata/Sample" in url]
    assert len(feed_pages) == -(-len(IVY_BATCHES) // PAGE_SIZE)
    assert all("skiptoken" in url for url in feed_pages[1:])
    assert set(service.entities) >= {"Sample", "SampleOverview", "ExperimentProgress"}


def _npm() -> str:
    npm = shutil.which("npm")
    assert npm is not None, "npm is missing (apt-get install -y nodejs npm)"
    return npm


def _node_client() -> Path:
    """The npm client, installed from the committed lock file when it is not yet there.
    Under a file lock: the test processes of both passes of ``make test`` may ask at once,
    and two ``npm ci`` in one folder delete each other's files."""
    with (NODE_DIR / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (NODE_DIR / "node_modules" / "@odata" / "client").is_dir():
            subprocess.run([_npm(), "ci", "--no-audit", "--no-fund"], cwd=NODE_DIR,
                           check=True, capture_output=True, timeout=300)
    return NODE_DIR / "read_feed.js"


@pytest.mark.parametrize("secret", ["password", "pat"])
def test_the_npm_odata_client_reads_the_same_view(feed: LiveFeed, secret: str) -> None:
    script = _node_client()
    node = shutil.which("node")
    assert node is not None, "node is missing (apt-get install -y nodejs)"
    result = subprocess.run(
        [node, str(script), feed.base_url, USERNAME,
         PASSWORD if secret == "password" else feed.pat, "Sample"],
        capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer == {"names": sorted(IVY_BATCHES, reverse=True),
                      "pages": -(-len(IVY_BATCHES) // PAGE_SIZE), "count": len(IVY_BATCHES)}


# What Power Query's OData.Feed sends (captured from Excel 365 / Power BI Desktop sessions):
# the service document, then $metadata, then the feed with the columns chosen in the
# navigator as $select, a filter step folded into $filter, and the server's next links.
EXCEL_HEADERS = {
    "Accept": "application/json;odata.metadata=minimal;q=1.0,application/json;q=0.9,*/*;q=0.1",
    "OData-Version": "4.0",
    "OData-MaxVersion": "4.0",
    "User-Agent": "Microsoft.Data.Mashup (https://go.microsoft.com/fwlink/?LinkID=304225)",
}
METADATA_HEADERS = {**EXCEL_HEADERS, "Accept": "application/xml"}


def test_an_excel_odata_feed_session_replays(feed: LiveFeed) -> None:
    anonymous = requests.get(f"{feed.base_url}/odata", headers=EXCEL_HEADERS, timeout=10)
    assert anonymous.status_code == 401  # Excel asks for credentials on this challenge
    assert anonymous.headers["WWW-Authenticate"].startswith("Basic")
    with _session(USERNAME, feed.pat) as excel:
        excel.headers.update(EXCEL_HEADERS)
        service = excel.get(f"{feed.base_url}/odata", timeout=10)
        assert service.status_code == 200
        assert {"name": "Sample", "kind": "EntitySet", "url": "Sample"} in \
            service.json()["value"]
        metadata = excel.get(f"{feed.base_url}/odata/$metadata", headers=METADATA_HEADERS,
                             timeout=10)
        assert metadata.status_code == 200
        assert metadata.headers["Content-Type"].startswith("application/xml")
        folded = quote("startswith(name, 'Batch')")
        select = quote("id,name,amount,departmentID")
        url = f"{feed.base_url}/odata/Sample?$filter={folded}&$select={select}"
        names = []
        while url:
            page = excel.get(url, timeout=10)
            assert page.status_code == 200 and page.headers["OData-Version"] == "4.0"
            body = page.json()
            assert body["@odata.context"] == "/odata/$metadata#Sample"
            assert all(set(row) == {"id", "name", "amount", "departmentID"}
                       for row in body["value"])
            names.extend(row["name"] for row in body["value"])
            url = body.get("@odata.nextLink")
        assert sorted(names) == IVY_BATCHES
