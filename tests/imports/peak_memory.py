"""The peak memory of one import, measured in a process of its own:
``python -m tests.imports.peak_memory INSTANCE DATABASE_URL FILE`` prints a JSON object.

The process builds the application on an initialised database, then measures two phases
the way production runs them, each from a reset high-water mark of its resident set
(``/proc/self/clear_refs``, ``VmHWM``): the request (``POST /api/import`` through the WSGI
app, which receives the file and reads its header) and, when a job was queued, the worker
(it claims the job as its upkeep does, plans the rows and stores their outcomes).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

_KIB = 1024


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise LookupError(field)


def _reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")


def _measured(phase: Any) -> dict[str, Any]:
    """Run ``phase()``; its answer with the resident set before and at its peak (MiB)."""
    _reset_peak()
    before = _status_kib("VmRSS")
    answer = phase()
    peak = _status_kib("VmHWM")
    return {"before_mib": before / _KIB, "peak_mib": peak / _KIB,
            "growth_mib": (peak - before) / _KIB, **answer}


def main(instance: str, database_url: str, file: str) -> dict[str, Any]:
    from labapp.imports import jobs
    from tests.conftest import ADMIN_PASSWORD, bearer_header, build_app, login

    app = build_app(Path(instance), database_url)
    client = app.test_client()
    # A token, so that the measured request checks no password (Argon2 takes 64 MiB).
    headers = bearer_header(login(client, "admin", ADMIN_PASSWORD)["accessToken"])
    client.get("/api/import/none", headers=headers)  # warm up: the first queries

    def request() -> dict[str, Any]:
        with open(file, "rb") as stream:
            response = client.post("/api/import", headers=headers,
                                   data={"file": (stream, Path(file).name), "eClass": "Sample"},
                                   content_type="multipart/form-data")
        return {"status": response.status_code, "body": response.get_json()}

    result = {"request": _measured(request)}
    if result["request"]["status"] == 202:
        job_id = result["request"]["body"]["id"]

        def worker() -> dict[str, Any]:
            with app.app_context():
                claimed = jobs.claim(job_id)
                finished = jobs.run(job_id) if claimed else None
                return {"status": finished.status if finished else None,
                        "error": finished.error if finished else None}

        result["worker"] = _measured(worker)
    return result


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:4])))
