"""Fixtures of the sequence tests."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask

from labapp.sequences.schemas import SequenceSchema
from labapp.sequences.service import list_sequences
from tests.conftest import ADMIN_PASSWORD, ApiClient


@pytest.fixture
def admin(api_as: Callable[..., ApiClient]) -> ApiClient:
    """An API client authenticated as the administrator created by ``flask init``."""
    return api_as("admin", password=ADMIN_PASSWORD)


@pytest.fixture
def stored(app: Flask) -> Callable[[], list[dict[str, Any]]]:
    """``stored()`` is every sequence as the database holds it now, as the API shows it."""

    def read() -> list[dict[str, Any]]:
        with app.app_context():
            return SequenceSchema(many=True).dump(list_sequences())

    return read
