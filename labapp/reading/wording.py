"""Values as a lab member reads them, shared by every page and widget that shows entities:
a field's label, a number without float noise, a moment as ISO text, and the field that
holds a number's unit.

Pure functions of the registry and the values (no queries, no request): the entity pages
(:mod:`labapp.entities.display`) and the dashboard widgets (:mod:`labapp.dashboards.widgets`)
both word values through them, so a list and a detail page never disagree.
"""
from __future__ import annotations

import json
import math
import re
from datetime import UTC, date, datetime
from typing import Any

from labapp.model.registry import ClassSpec

ATTRIBUTES = "attributes"
_LABELS = {"id": "ID", "eClass": "Class", "sha256": "SHA-256"}
# Decimals a number shows at most; below 1 as many as keep this many significant digits.
DECIMALS = 4
# Fields that hold the unit of another when ``<name>Unit`` does not: the amount's is ``unit``.
_UNIT_FIELDS = {"amount": "unit"}


def label_of(name: str) -> str:
    """A field's name in words: ``concentrationUnit`` → ``Concentration unit``,
    ``experimentID`` → ``Experiment`` (a reference is named after what it points at),
    ``createdUtc`` → ``Created`` (the pages show moments in the viewer's own time); an
    attribute column keeps its name."""
    if name in _LABELS or name.startswith(f"{ATTRIBUTES}."):
        return _LABELS.get(name, name)
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).split()
    if len(words) > 1 and words[-1] in ("ID", "Utc"):
        words.pop()
    return " ".join([words[0].capitalize()] + [
        word if word.isupper() else word.lower() for word in words[1:]])


_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def words_of(key: str) -> str:
    """A key of the API (a status, an event kind, a log action) as people write it:
    ``InProgress`` → ``In progress``, ``CheckedIn`` → ``Checked in``, ``QCPassed`` →
    ``QC passed``. A key of one word, or one already written with spaces, stays as it is."""
    words = _WORD.findall(key)
    if len(words) < 2 or "".join(words) != key:
        return key
    return " ".join([words[0]] + [word if word.isupper() else word.lower()
                                  for word in words[1:]])


def number_text(value: float) -> str:
    """A float without its binary noise: at most :data:`DECIMALS` decimals, more below 1 to
    keep as many significant digits, trailing zeros dropped (``38.14494730136748`` →
    ``38.1449``, ``0.000123456`` → ``0.0001235``, ``25.0`` → ``25``)."""
    if not math.isfinite(value) or value == 0:
        return "0" if value == 0 else str(value)
    magnitude = math.floor(math.log10(abs(value)))
    return f"{value:.{max(DECIMALS, DECIMALS - 1 - magnitude)}f}".rstrip("0").rstrip(".")


def iso(value: datetime | date) -> str:
    """A timestamp as ISO 8601 in UTC to the second (``2024-03-05T22:30:00Z``); a date as
    ``2024-03-05``."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return value.isoformat()


def text(value: Any, *, exact: bool = False) -> str:
    """A value as one line of text; empty for null. Numbers are rounded as
    :func:`number_text` says unless ``exact``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and not exact:
        return number_text(value)
    if isinstance(value, datetime | date):
        return iso(value)
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


def unit_field(spec: ClassSpec, name: str) -> str | None:
    """The field of ``spec`` that holds the unit of the number field ``name``, if any."""
    for candidate in (f"{name}Unit", _UNIT_FIELDS.get(name)):
        if candidate and candidate in spec.fields:
            return candidate
    return None
