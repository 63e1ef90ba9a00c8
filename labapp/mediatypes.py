"""Media types: what a well-formed one looks like (RFC 9110 §8.3.1)."""
from __future__ import annotations

import re

# RFC 9110 §8.3.1: type "/" subtype *( OWS ";" OWS parameter ), ASCII only.
_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_QUOTED = r'"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\[\x20-\x7e])*"'
_MEDIA_TYPE = re.compile(rf"{_TOKEN}/{_TOKEN}(?:[ \t]*;[ \t]*{_TOKEN}=(?:{_TOKEN}|{_QUOTED}))*")


def is_media_type(text: str) -> bool:
    """Whether ``text`` is a well-formed media type (``text/csv; charset=utf-8``), which also
    means it is safe as a header value."""
    return _MEDIA_TYPE.fullmatch(text) is not None
