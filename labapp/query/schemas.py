"""Inputs and outputs of ``/api/query/view`` and ``/api/query/dataset``.

The dataset body is a JSON array, which the ``@endpoint`` body loader (objects only) does
not take: :func:`load_queries` loads it, one :class:`DatasetQuerySchema` per item, and names
each error by its place in the array (``queries[2].filters[0].op``).
"""
from __future__ import annotations

import re
from typing import Any

from marshmallow import Schema, ValidationError, fields, validates_schema

from labapp.errors import InvalidInput, flatten_messages
from labapp.query.conditions import OPERATORS
from labapp.query.dataset import MAX_QUERIES
from labapp.query.filter import FILTER_HELP
from labapp.reading.schemas import ENTITY_CLASS, ODataQuerySchema

_INDEX = re.compile(r"\.(\d+)(?=\.|$)")


class ViewQuerySchema(ODataQuerySchema):
    """OData query options of a view, as for the entity list."""

    top = fields.String(data_key="$top", metadata={"pattern": "^[0-9]*$"})
    skip = fields.String(data_key="$skip", metadata={"pattern": "^[0-9]*$"})
    select = fields.String(data_key="$select")
    orderby = fields.String(data_key="$orderby")
    filter = fields.String(data_key="$filter", metadata={"description": FILTER_HELP})


class ViewPageSchema(Schema):
    data = fields.List(fields.Dict(), metadata={"description": "Rows, keyed by API names."})
    total = fields.Integer()
    nextSkip = fields.Integer()


class DatasetSortingSchema(Schema):
    field = fields.String(required=True)
    direction = fields.String(metadata={"description": "asc (default) or desc",
                                        "enum": ["asc", "desc"]})


class DatasetFilterSchema(Schema):
    field = fields.String(required=True)
    op = fields.String(metadata={"description": "A $filter operator: eq (default; in when "
                                                "values or in is given), ne, gt, ge, lt, le, "
                                                "contains, startswith, endswith, in, not_in, "
                                                "isnull, isnotnull, isempty, isnotempty",
                                 "enum": sorted(OPERATORS)})
    value = fields.Raw(allow_none=True,
                       metadata={"description": "The value; '$key.field' takes it from an "
                                                "earlier entity result. On a date or datetime "
                                                "field a relative date as in $filter, "
                                                "evaluated at request time in UTC: "
                                                "\"now() add duration'P14D'\", "
                                                "\"date(now())\""})
    values = fields.List(fields.Raw(allow_none=True))
    join = fields.String(data_key="in", metadata={"description": "key.field: the values of "
                                                                 "field in an earlier "
                                                                 "collection"})


class DatasetQuerySchema(Schema):
    """One query of a dataset (unknown keys are rejected)."""

    collection = fields.String(metadata={"description": "Result key: all matches"})
    entity = fields.String(metadata={"description": "Result key: the first match or null"})
    eclass = fields.String(data_key="eClass", metadata={
        "allOf": [{"$ref": f"#/components/schemas/{ENTITY_CLASS}"}]})
    view = fields.String()
    sortings = fields.List(fields.Nested(DatasetSortingSchema))
    filters = fields.List(fields.Nested(DatasetFilterSchema))
    select = fields.List(fields.String())

    @validates_schema
    def exactly_one(self, data: dict[str, Any], **_kwargs: Any) -> None:
        for pair in (("collection", "entity"), ("eclass", "view")):
            if sum(name in data for name in pair) != 1:
                first, second = (self.fields[name].data_key or name for name in pair)
                raise ValidationError(f"Give exactly one of '{first}' and '{second}'.",
                                      field_name=first)


# The body of POST /api/query/dataset as the document shows it: each query names exactly one
# result key and exactly one source.
DATASET_BODY = {"type": "array", "maxItems": MAX_QUERIES, "items": {"allOf": [
    DatasetQuerySchema,
    {"oneOf": [{"required": ["collection"]}, {"required": ["entity"]}]},
    {"oneOf": [{"required": ["eClass"]}, {"required": ["view"]}]}]}}


def _path(field: str) -> str:
    """``queries[2].filters.0.op`` as ``queries[2].filters[0].op``; ``._schema`` dropped."""
    return _INDEX.sub(r"[\1]", field.removesuffix("._schema"))


def load_queries(document: Any) -> list[dict[str, Any]]:
    """The queries of a dataset body; 400 ``validation_failed`` naming each bad place."""
    if not isinstance(document, list):
        raise InvalidInput("The body must be a JSON array of queries.",
                           code="validation_failed",
                           errors=[{"field": "queries", "message": "Expected an array."}])
    if len(document) > MAX_QUERIES:
        message = f"At most {MAX_QUERIES} queries per request, not {len(document)}."
        raise InvalidInput(message, code="validation_failed",
                           errors=[{"field": "queries", "message": message}])
    schema = DatasetQuerySchema()
    queries: list[dict[str, Any]] = []
    errors: list[dict[str, str]] = []
    for index, item in enumerate(document):
        try:
            queries.append(schema.load(item))
        except ValidationError as error:
            errors += [{"field": _path(entry["field"]), "message": entry["message"]}
                       for entry in flatten_messages(error.messages, f"queries[{index}]")]
    if errors:
        first = errors[0]
        raise InvalidInput(f"{first['field']}: {first['message']}", code="validation_failed",
                           errors=errors)
    return queries
