"""What import-linter cannot see (pyproject.toml's contracts ``whoosh`` and
``postgresql-search`` see the imports): PostgreSQL's full text is spoken in SQL by the
PostgreSQL search backend alone, so changing search means reading one module per backend
(issue 34 §1)."""
from __future__ import annotations

import re

from labapp import PROJECT_ROOT

_FULL_TEXT = re.compile(r"tsvector|tsquery|ts_rank|ts_headline|@@", re.IGNORECASE)
_BACKEND = PROJECT_ROOT / "labapp" / "search" / "postgresql.py"


def speaking_full_text() -> list[str]:
    """The modules of labapp, other than the PostgreSQL search backend, whose text names a
    full-text type, function or operator of PostgreSQL."""
    return sorted(str(path.relative_to(PROJECT_ROOT))
                  for path in (PROJECT_ROOT / "labapp").rglob("*.py")
                  if path != _BACKEND and _FULL_TEXT.search(path.read_text()))


def test_only_the_postgresql_backend_speaks_full_text() -> None:
    assert speaking_full_text() == []
    assert _FULL_TEXT.search(_BACKEND.read_text())  # the check looks where it should
