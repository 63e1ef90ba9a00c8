"""``POST /api/query/dataset``: inter-related queries answered together (http-api.md "Query").

Each query reads an entity class (``eClass``) or a database view (``view``) with the same
machinery as the entity list and the view endpoint: names resolve through the target's
field source (case-insensitive, ``attributes.key`` included), each filter is a condition of
the ``$filter`` dialect (:func:`~labapp.query.conditions.compile_condition`: same typing,
escaping and null rules), and the caller's row-level security applies to every query.

Queries run in order, so a query can join an earlier one: ``in: "key.field"`` keeps rows
whose field is among the values of ``field`` in the earlier *collection* ``key``; a value
``"$key.field"`` is ``field`` of the earlier *entity* result ``key`` (when that entity is null
the filter matches nothing). A string value is such a reference only when it has that form
with a key of letters, digits and ``_``; any other string is taken literally.

A ``collection`` matching more than :data:`MAX_COLLECTION` rows is refused (400) rather than
cut: a silently shortened collection would make every later ``in`` join wrong. A client
needing more pages through the entity list or view endpoint. An ``entity`` answers its first
row or null. Sorting always ends with ``id``. Errors are 400 ``invalid_dataset``
naming the place, as in ``queries[2].filters[0].field``.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, false, true

from labapp.access.actor import Actor
from labapp.errors import InvalidInput
from labapp.model.registry import find_class
from labapp.query.conditions import (
    MEMBERSHIP,
    OPERATORS,
    POSTFIX,
    ConditionError,
    compile_condition,
)
from labapp.query.dbviews import find_view
from labapp.query.fields import FilterField, UnknownField, resolve_field
from labapp.query.filter import relative_value
from labapp.query.listing import sort_clause
from labapp.query.rows import Target, entity_target, field_value, read_rows, view_target

MAX_QUERIES = 20
MAX_COLLECTION = 5000
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_VALUE_REFERENCE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)\.(.+)", re.DOTALL)
_ALWAYS = ("id", "eClass")


class DatasetError(InvalidInput):
    """400 ``invalid_dataset``: ``path`` names the query and the place within it."""

    code = "invalid_dataset"
    title = "Invalid dataset query"

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}", errors=[{"field": path, "message": message}])


@dataclass(frozen=True)
class _Result:
    """An answered query: its kind, target and full rows (every column)."""

    kind: str
    target: Target
    rows: list[dict[str, Any]]


def _result_keys(queries: list[dict[str, Any]]) -> dict[str, int]:
    """Each result key with the index of its query; 400 for a malformed or repeated key."""
    keys: dict[str, int] = {}
    for index, query in enumerate(queries):
        kind = "collection" if "collection" in query else "entity"
        key, path = query[kind], f"queries[{index}].{kind}"
        if not _KEY.fullmatch(key):
            raise DatasetError(path, f"'{key}' is not a valid result key: use up to 64 "
                                     "letters, digits and _, not starting with a digit")
        if key in keys:
            raise DatasetError(path, f"Result key '{key}' is already used by "
                                     f"queries[{keys[key]}]")
        keys[key] = index
    return keys


def run_dataset(actor: Actor, queries: list[dict[str, Any]]) -> dict[str, Any]:
    """Answer ``queries`` (as loaded by the schema) for ``actor``, keyed by result name:
    a list per collection, a row or None per entity."""
    keys = _result_keys(queries)
    now = datetime.now(UTC)  # now() of every relative date in the request
    results: dict[str, _Result] = {}
    answer: dict[str, Any] = {}
    for index, query in enumerate(queries):
        key, kind = (query["collection"], "collection") if "collection" in query else (
            query["entity"], "entity")
        runner = _QueryRun(actor, query, index, results, keys, now)
        rows, names = runner.run(MAX_COLLECTION + 1 if kind == "collection" else 1)
        if len(rows) > MAX_COLLECTION:
            raise DatasetError(f"queries[{index}]", f"the collection matches more than "
                                                    f"{MAX_COLLECTION} rows; narrow its filters "
                                                    "or page through the entity list")
        results[key] = _Result(kind, runner.target, rows)
        shown = [_project(row, names) for row in rows]
        answer[key] = shown if kind == "collection" else (shown[0] if shown else None)
    return answer


def _project(row: dict[str, Any], names: list[str]) -> dict[str, Any]:
    return {name: field_value(row, name) for name in names} if names else row


class _QueryRun:
    """One query: its target, conditions, order and selection, checked as they are built."""

    def __init__(self, actor: Actor, query: dict[str, Any], index: int,
                 results: dict[str, _Result], keys: dict[str, int], now: datetime) -> None:
        self.query = query
        self.now = now
        self.index = index
        self.path = f"queries[{index}]"
        self.results = results
        self.keys = keys
        self.target = self._target(actor)

    def run(self, limit: int) -> tuple[list[dict[str, Any]], list[str]]:
        """The full rows (at most ``limit``) and the names to show (empty: every field)."""
        conditions = [self._condition(item, f"{self.path}.filters[{index}]")
                      for index, item in enumerate(self.query.get("filters", []))]
        order = [self._sorting(item, f"{self.path}.sortings[{index}]")
                 for index, item in enumerate(self.query.get("sortings", []))]
        names = self._selection()
        rows = read_rows(self.target, [], condition=and_(true(), *conditions),
                         order=[*order, self.target.key.asc()], limit=limit)
        return rows, names

    def _target(self, actor: Actor) -> Target:
        if "eclass" in self.query:
            spec = find_class(self.query["eclass"])
            if spec is None:
                raise DatasetError(f"{self.path}.eClass",
                                   f"Unknown entity class '{self.query['eclass']}'")
            return entity_target(actor, spec)
        view = find_view(self.query["view"])
        if view is None:
            raise DatasetError(f"{self.path}.view", f"Unknown view '{self.query['view']}'")
        return view_target(actor, view)

    def _field(self, name: str, path: str, target: Target | None = None) -> FilterField:
        """Field ``name`` of ``target`` (this query's by default); JSON fields are refused."""
        try:
            found = resolve_field((target or self.target).source, name)
        except UnknownField as error:
            raise DatasetError(path, str(error)) from None
        if found.type == "json":
            raise DatasetError(path, f"Field '{found.name}' holds JSON; use one key, as in "
                                     "attributes.<key>")
        return found

    def _selection(self) -> list[str]:
        names: list[str] = []
        for index, name in enumerate(self.query.get("select", [])):
            path = f"{self.path}.select[{index}]"
            try:
                names.append(resolve_field(self.target.source, name).name)
            except UnknownField as error:
                raise DatasetError(path, str(error)) from None
        return list(dict.fromkeys([*_ALWAYS, *names])) if names else []

    def _sorting(self, item: dict[str, Any], path: str) -> ColumnElement[Any]:
        found = self._field(item["field"], f"{path}.field")
        direction = item.get("direction", "asc").lower()
        if direction not in ("asc", "desc"):
            raise DatasetError(f"{path}.direction",
                               f"Expected asc or desc, not '{item['direction']}'")
        return sort_clause(found, direction == "desc")

    def _condition(self, item: dict[str, Any], path: str) -> ColumnElement[bool]:
        given = [name for name in ("value", "values", "join") if name in item]
        if len(given) > 1:
            raise DatasetError(path, "Give only one of 'value', 'values' and 'in'")
        op = item.get("op") or ("in" if given and given[0] != "value" else "eq")
        if op.lower() not in OPERATORS:
            raise DatasetError(f"{path}.op", f"Unknown operator '{op}'; use one of "
                                             + ", ".join(sorted(OPERATORS)))
        op = op.lower()
        self._field(item["field"], f"{path}.field")
        source = given[0] if given else None
        place = f"{path}.{'in' if source == 'join' else source}" if source else path
        if op in POSTFIX:
            if source is not None:
                raise DatasetError(place, f"Operator '{op}' takes no value")
        elif op in MEMBERSHIP:
            if source not in ("values", "join"):
                raise DatasetError(place, f"Operator '{op}' needs 'values' or 'in'")
        elif source != "value":
            raise DatasetError(place, f"Operator '{op}' needs a 'value' ('values' and 'in' go "
                                      "with the in and not_in operators)")
        value = item.get("values") if source == "values" else item.get("value")
        if source == "join":
            value = self._collection_values(item["join"], place)
        elif isinstance(value, str) and _VALUE_REFERENCE.fullmatch(value):
            found, value = self._entity_value(value, place)
            if not found:
                return false()
        try:
            return compile_condition(self.target.source, item["field"], op, value,
                                     relative=lambda text: relative_value(text, self.now))
        except ConditionError as error:
            raise DatasetError(place, error.detail) from None

    def _earlier(self, key: str, kind: str, path: str,
                 usage: Callable[[str], str]) -> _Result:
        """The earlier result ``key``, which must be of ``kind``."""
        if key not in self.results:
            if key not in self.keys:
                raise DatasetError(path, f"Unknown result key '{key}'")
            which = ("this query's own result" if self.keys[key] == self.index
                     else f"answered by a later query (queries[{self.keys[key]}])")
            raise DatasetError(path, f"'{key}' is {which}; refer to earlier queries only")
        result = self.results[key]
        if result.kind != kind:
            article = "a" if result.kind == "collection" else "an"
            raise DatasetError(path, f"'{key}' is {article} {result.kind} result; "
                                     f"{usage(key)}")
        return result

    def _collection_values(self, reference: str, path: str) -> list[Any]:
        """The distinct non-null values of ``key.field`` in an earlier collection."""
        key, dot, name = reference.partition(".")
        if not dot or not name:
            raise DatasetError(path, f"Expected 'key.field', not '{reference}'")
        result = self._earlier(key, "collection", path,
                               lambda key: f"use the value '${key}.<field>'")
        found = self._field(name, path, result.target)
        values = [field_value(row, found.name) for row in result.rows]
        if any(isinstance(value, dict | list) for value in values):
            raise DatasetError(path, f"'{reference}' holds JSON objects or arrays")
        return list(dict.fromkeys(value for value in values if value is not None))

    def _entity_value(self, reference: str, path: str) -> tuple[bool, Any]:
        """``(found, value)`` of ``$key.field``; found is False when the entity is null."""
        match = _VALUE_REFERENCE.fullmatch(reference)
        if match is None:
            raise TypeError(f"not a $key.field reference: {reference!r}")
        key, name = match.groups()
        result = self._earlier(key, "entity", path,
                               lambda key: f"join it with in: '{key}.<field>'")
        found = self._field(name, path, result.target)
        if not result.rows:
            return False, None
        return True, field_value(result.rows[0], found.name)
