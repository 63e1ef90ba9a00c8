"""Bodies of the department and project access endpoints."""
from __future__ import annotations

from marshmallow import INCLUDE, Schema, fields, validate

from labapp.grants.service import SETTING_NAME
from labapp.model.access import ACCESS_TYPES
from labapp.schemafields import WriteBackSchema

_ID = validate.Length(min=1, max=64)


class DepartmentGrantSchema(WriteBackSchema):
    """A grant to add or update (an entry as read may be sent back)."""

    accessType = fields.String(required=True, validate=validate.OneOf(ACCESS_TYPES))
    userID = fields.String(load_default=None, allow_none=True, validate=_ID)
    accessDepartmentID = fields.String(load_default=None, allow_none=True, validate=_ID)
    isMember = fields.Boolean(dump_only=True)
    user = fields.Dict(dump_only=True)
    department = fields.Dict(dump_only=True)


class ProjectGrantSchema(WriteBackSchema):
    """A grant to add or update (an entry as read may be sent back)."""

    accessType = fields.String(required=True, validate=validate.OneOf(ACCESS_TYPES))
    userID = fields.String(load_default=None, allow_none=True, validate=_ID)
    departmentID = fields.String(load_default=None, allow_none=True, validate=_ID)
    user = fields.Dict(dump_only=True)
    department = fields.Dict(dump_only=True)


class GranteeUserSchema(Schema):
    id = fields.String()
    name = fields.String()
    email = fields.String(allow_none=True)
    departmentID = fields.String(allow_none=True)
    isActive = fields.Boolean()


class GranteeDepartmentSchema(Schema):
    id = fields.String()
    name = fields.String()


class DepartmentAccessEntrySchema(Schema):
    isMember = fields.Boolean()
    accessType = fields.String()
    userID = fields.String(allow_none=True)
    user = fields.Nested(GranteeUserSchema, allow_none=True)
    accessDepartmentID = fields.String(allow_none=True)
    department = fields.Nested(GranteeDepartmentSchema, allow_none=True)


class ProjectAccessEntrySchema(Schema):
    accessType = fields.String()
    userID = fields.String(allow_none=True)
    user = fields.Nested(GranteeUserSchema, allow_none=True)
    departmentID = fields.String(allow_none=True)
    department = fields.Nested(GranteeDepartmentSchema, allow_none=True)


class DeleteQuerySchema(Schema):
    force = fields.Boolean(load_default=False,
                           metadata={"description": "ADMIN: clear references and delete"})


# The settings name in the path of the project settings endpoints.
SETTINGS_NAME_PATH = {"settings_name": {"pattern": rf"^{SETTING_NAME.pattern}$"}}


class ProjectSettingSchema(Schema):
    """A settings object: any JSON object, stored and answered as given."""

    class Meta:
        unknown = INCLUDE

    description = fields.Raw(metadata={"description": "any keys and values; this one is an "
                                                      "example"})
