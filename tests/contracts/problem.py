"""The one error body of the machine faces (spec/decisions.md §2), as a reusable assertion."""
from __future__ import annotations

from typing import Any

from werkzeug.test import TestResponse

PROBLEM_MEDIA_TYPE = "application/problem+json"
PROBLEM_KEYS = frozenset({"type", "title", "status", "detail", "code"})


def assert_problem(response: TestResponse, status: int, code: str, *,
                   errors: bool = False) -> dict[str, Any]:
    """Assert ``response`` is exactly the RFC 9457 problem for ``status``/``code``; return it.

    ``errors`` says whether the body must carry a non-empty ``errors`` list of
    ``{field, message}``; when False the key must be absent.
    """
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == PROBLEM_MEDIA_TYPE
    body = response.get_json()
    assert isinstance(body, dict)
    assert set(body) == PROBLEM_KEYS | ({"errors"} if errors else set()), body
    assert body["status"] == status
    assert body["code"] == code
    assert body["type"] == f"/problems/{code}"
    assert isinstance(body["title"], str) and body["title"]
    assert isinstance(body["detail"], str) and body["detail"]
    if errors:
        assert isinstance(body["errors"], list) and body["errors"]
        for entry in body["errors"]:
            assert set(entry) == {"field", "message"}, entry
            assert isinstance(entry["field"], str) and entry["field"]
            assert isinstance(entry["message"], str) and entry["message"]
    return body
