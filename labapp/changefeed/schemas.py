"""The change feed's query and answer, as the OpenAPI document describes them."""
from __future__ import annotations

from marshmallow import Schema, fields, validate

from labapp.changefeed.feed import CURSOR
from labapp.schemafields import UtcTimestamp

KINDS = ("create", "update", "delete", "checkin", "checkout", "move", "hidden")
MAX_TOP = 500


class ChangesQuerySchema(Schema):
    after = fields.String(load_default=None, validate=validate.Regexp(CURSOR.pattern),
                          metadata={"description": "the cursor: a page's `next` (a change's "
                                                   "`seq` also serves); omitted, the answer "
                                                   "is an empty page and the current cursor "
                                                   "(follow from now)"})
    top = fields.Integer(data_key="$top", load_default=100,
                         validate=validate.Range(min=1, max=MAX_TOP),
                         metadata={"description": "at most this many changes"})
    wait = fields.Integer(load_default=0, validate=validate.Range(min=0, max=3600),
                          metadata={"description": "seconds to wait for a change when there "
                                                   "is none yet (long polling; at most the "
                                                   "server's CHANGES_MAX_WAIT)"})
    expand = fields.String(data_key="$expand", load_default=None,
                           validate=validate.OneOf(["entity"]),
                           metadata={"description": "`entity`: each change carries the "
                                                    "entity as the caller reads it now"})


class ChangeSchema(Schema):
    seq = fields.Integer(metadata={"description": "the change's place in the log"})
    entityID = fields.String()
    eClass = fields.String()
    kind = fields.String(validate=validate.OneOf(KINDS),
                         metadata={"description": "`hidden`: the change took the entity "
                                                  "out of the caller's sight"})
    version = fields.Integer(metadata={"description": "the entity's version after it"})
    actorID = fields.String(allow_none=True)
    createdUtc = UtcTimestamp()
    entity = fields.Dict(allow_none=True,
                         metadata={"description": "with $expand=entity: the entity now, or "
                                                  "null when it is gone or out of sight"})


class ChangePageSchema(Schema):
    data = fields.List(fields.Nested(ChangeSchema))
    next = fields.String(metadata={"description": "the cursor to pass as `after` next; it "
                                                  "expires (410) when the caller's access "
                                                  "changes"})
