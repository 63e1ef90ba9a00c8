"""Bodies of the entity endpoints.

Entity items are loaded as plain objects and checked against the data-model registry by the
service; :func:`entity_item_schemas` describes the same checks for the OpenAPI document, one
schema per class of the registry as it is when the document is built (extension classes
included).
"""
from __future__ import annotations

from typing import Any

from marshmallow import INCLUDE, Schema, fields

from labapp.auth.secrets import MIN_PASSWORD_LENGTH
from labapp.entities.batch import MAX_BATCH
from labapp.model.registry import ClassSpec, FieldSpec, classes
from labapp.query.filter import FILTER_HELP
from labapp.reading.schemas import ENTITY_CLASS, ODataQuerySchema

ENTITY_ITEM = "EntityItem"  # the component every batch item is described by

# An id: literal, or notation (#variable, !sequence, #variable!sequence).
_ID = {"type": "string", "minLength": 1, "maxLength": 64,
       "pattern": r"^(?:[^#!][\s\S]*|#[A-Za-z_][A-Za-z0-9_]*(?:![A-Za-z0-9_.\-]+)?)$",
       "description": "the id to create or update; absent: drawn from the class's "
                      "sequence; #name declares a variable, #name!sequence draws from one"}
# A username (the id of a User): works in Basic credentials and the login form.
_USERNAME = {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$"}
_FORMATS = {"date": "date", "datetime": "date-time"}
_TYPES = {"str": "string", "text": "string", "ref": "string", "int": "integer",
          "float": "number", "bool": "boolean", "date": "string", "datetime": "string",
          "json": "object"}
_NOTES = {"type": "array", "description": "create only: notes to attach", "items": {
    "type": "object", "additionalProperties": False, "required": ["content"],
    "properties": {"content": {"type": "string"}, "type": {"type": "string", "maxLength": 64}}}}
_FILES = {"type": "array", "description": "create only: files to attach", "items": {
    "type": "object", "additionalProperties": False, "required": ["name", "content"],
    "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 255},
                   "content": {"type": "string", "contentEncoding": "base64"},
                   "mediaType": {"type": "string", "pattern": r"^[!-~]+/[!-~]+$"},
                   "type": {"type": "string", "maxLength": 64},
                   "description": {"type": "string"}}}}
_PASSWORD = {"type": "string", "minLength": MIN_PASSWORD_LENGTH, "pattern": r"\S",
             "description": f"create only: at least {MIN_PASSWORD_LENGTH} characters, "
                            "not blank"}


def _field_schema(spec: ClassSpec, field: FieldSpec) -> dict[str, Any]:
    """What a batch accepts for one field: type, length, choices, range, format."""
    if field.name == "version":
        return {"type": "integer", "minimum": 1,
                "description": "the version being changed (stale: 409)"}
    if field.name == "status":
        return {"type": "string", "enum": list(spec.workflow.statuses)}
    schema: dict[str, Any] = {"type": _TYPES[field.type]}
    if field.read_only:
        schema["readOnly"] = True
    if field.type in _FORMATS:
        schema["format"] = _FORMATS[field.type]
    if field.max_length is not None:
        schema["maxLength"] = field.max_length
    if field.choices:
        schema["enum"] = list(field.choices)
    if field.type in {"int", "float"}:
        limit = field.maximum or 2**63 - 1
        schema["maximum"] = limit
        schema["minimum"] = -limit if field.minimum is None else field.minimum
    if field.ref:
        schema["description"] = f"the id of a {field.ref}"
    if field.nullable or field.name == "attributes":
        schema["type"] = [schema["type"], "null"]
        if "enum" in schema:
            schema["enum"] = [*schema["enum"], None]
    return schema


def class_item_schema(spec: ClassSpec) -> dict[str, Any]:
    """The JSON Schema of one batch item of class ``spec``."""
    properties: dict[str, Any] = {"eClass": {"type": "string", "const": spec.name}}
    for field in spec.fields.values():
        if field.attr is not None and field.name not in {"eClass", "id"}:
            properties[field.name] = _field_schema(spec, field)
    properties["id"] = dict(_USERNAME if spec.prefix is None else _ID)
    properties["notes"] = _NOTES
    properties["files"] = _FILES
    if "password" in spec.create_only:
        properties["password"] = _PASSWORD
    required = ["eClass"] if spec.prefix is not None else ["eClass", "id"]
    return {"type": "object", "title": spec.name, "required": required,
            "properties": properties, "additionalProperties": False,
            "patternProperties": {r"^attributes\.[\s\S]+$": {}},
            "description": f"A {spec.name} to create or update. Read-only fields are "
                           "ignored when sent back; attributes.<key> sets one attribute."}


def entity_item_schemas() -> dict[str, dict[str, Any]]:
    """The components describing batch items: one per class, :data:`ENTITY_ITEM`, the
    choice between them keyed on ``eClass``, and :data:`ENTITY_CLASS`, the class names."""
    components = {f"Entity{spec.name}": class_item_schema(spec) for spec in classes()}
    items = [{"$ref": f"#/components/schemas/{name}"} for name in components]
    components[ENTITY_CLASS] = {"type": "string", "enum": [spec.name for spec in classes()]}
    components[ENTITY_ITEM] = {
        "oneOf": items,
        "discriminator": {"propertyName": "eClass", "mapping": {
            spec.name: f"#/components/schemas/Entity{spec.name}" for spec in classes()}}}
    return components


class EntityBatchSchema(Schema):
    entities = fields.List(
        fields.Dict(metadata={"allOf": [{"$ref": f"#/components/schemas/{ENTITY_ITEM}"}]}),
        required=True,  # the size is checked by the service, whose errors name the batch
        metadata={"description": "Entities to create or update, in one transaction.",
                  "minItems": 1, "maxItems": MAX_BATCH})


class EntityListSchema(Schema):
    entities = fields.List(fields.Dict())


class EntityPageSchema(Schema):
    data = fields.List(fields.Dict())
    total = fields.Integer(allow_none=True, metadata={
        "description": "how many visible entities match; null with $count=false"})
    nextSkip = fields.Integer()
    nextSkipToken = fields.String(allow_none=True, metadata={
        "description": "the keyset position after the page's last row, null on the last "
                       "page ($top=0: the $skiptoken sent): pass it as $skiptoken (with "
                       "nextSkip as $skip) for the next page, which then costs what the "
                       "first does"})


class CloneOverridesSchema(Schema):
    """Properties to change in the copy: any of the class, checked like a batch item."""

    class Meta:
        unknown = INCLUDE

    name = fields.String(metadata={"description": "default: '<name> (copy)'"})
    attributes = fields.Dict(metadata={"description": "merged into the copied attributes; "
                                                      "attributes.<key> works too"})


class EntityQuerySchema(ODataQuerySchema):
    """OData query options of the entity list."""

    top = fields.String(data_key="$top", metadata={"pattern": "^[0-9]*$"})
    skip = fields.String(data_key="$skip", metadata={"pattern": "^[0-9]*$"})
    select = fields.String(data_key="$select")
    orderby = fields.String(data_key="$orderby")
    filter = fields.String(data_key="$filter", metadata={"description": FILTER_HELP})


class KeysetQuerySchema(Schema):
    """``$skiptoken``: where a page of the entity list starts (its ``nextSkipToken``)."""

    skiptoken = fields.String(data_key="$skiptoken", metadata={
        "pattern": "^[A-Za-z0-9_-]*$",
        "description": "a nextSkipToken of this class and $orderby: the page starts right "
                       "after that row, whatever $skip says (which then only counts); empty: "
                       "absent"})
