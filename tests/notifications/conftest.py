"""Fixtures of the notification tests: the entity tests' callers and factories."""
from __future__ import annotations

from typing import Any

from tests.conftest import ApiClient
from tests.entities.conftest import admin, department, member, project  # noqa: F401


def unread(api: ApiClient) -> list[dict[str, Any]]:
    """``GET /api/notification/unread`` (asserting 200)."""
    response = api.get("/api/notification/unread")
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()
