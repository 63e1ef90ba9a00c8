"""The system query options of ``GET /odata/{view}``, checked before anything is read.

``$filter`` (decisions §7, the one parser), ``$select``, ``$orderby``, ``$top``, ``$skip``,
``$count``, ``$skiptoken`` and ``$format=json`` (or ``application/json``, parameters
allowed). Option names are matched case-insensitively (OData 4.01); any other ``$`` option
(``$expand``, ``$apply``, ``$search``...) is 400 ``unsupported_option``, since silently
ignoring it would return different data than asked.
Options without ``$`` are custom options and are ignored, as the standard says.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from labapp.errors import InvalidInput
from labapp.query.listing import count_value, paging_value

SUPPORTED = ("$filter", "$select", "$orderby", "$top", "$skip", "$count", "$skiptoken",
             "$format")


def invalid(option: str, message: str, code: str = "invalid_option") -> InvalidInput:
    """400 naming ``option`` (the OData error's ``target``)."""
    return InvalidInput(message, code=code, errors=[{"field": option, "message": message}])


@dataclass(frozen=True)
class FeedOptions:
    """The query options of one feed request, parsed (names and values still unresolved)."""

    filter: str | None = None
    select: str | None = None
    orderby: str | None = None
    top: int | None = None
    skip: int = 0
    count: bool = False
    skiptoken: str | None = None


def parse_options(args: Mapping[str, str]) -> FeedOptions:
    """Parse the query string ``args``; raise InvalidInput naming the offending option."""
    found: dict[str, str] = {}
    for name, value in args.items():
        if not name.startswith("$"):
            continue
        lowered = name.lower()
        if lowered not in SUPPORTED:
            raise invalid(name, f"The query option {name} is not supported here; supported: "
                                f"{', '.join(SUPPORTED)}", "unsupported_option")
        found[lowered] = value
    fmt = found.get("$format")
    if fmt is not None and fmt.split(";")[0].strip().lower() not in ("json", "application/json"):
        raise invalid("$format", f"Only $format=json is served, not '{fmt}'",
                      "unsupported_format")
    top = found.get("$top")
    skip = found.get("$skip")
    return FeedOptions(filter=found.get("$filter"), select=found.get("$select"),
                       orderby=found.get("$orderby"),
                       top=None if top is None else paging_value("$top", top),
                       skip=0 if skip is None else paging_value("$skip", skip),
                       count=count_value(found.get("$count"), False, "invalid_option"),
                       skiptoken=found.get("$skiptoken"))
