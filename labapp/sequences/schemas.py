"""Bodies of the sequence endpoints."""
from __future__ import annotations

import re

from marshmallow import Schema, ValidationError, fields, validate

from labapp.schemafields import WriteBackSchema
from labapp.sequences.service import MAX_NEXT_VALUE, pattern_of


class WholeMatch(validate.Regexp):
    """:class:`~marshmallow.validate.Regexp` over the whole value: with ``re.match`` a ``$``
    also accepts a final newline. The pattern stays ECMA-compatible for the OpenAPI document."""

    def __init__(self, regex: str, *, error: str | None = None) -> None:
        super().__init__(regex, error=error)
        self.text_regex = re.compile(regex)

    # marshmallow's Regexp also declares a bytes overload; this validator sees text only.
    def __call__(self, value: str) -> str:  # type: ignore[override]
        if self.text_regex.fullmatch(value) is None:
            raise ValidationError(self._format_error(value))
        return value


class SequenceSchema(Schema):
    """A sequence as the API shows it."""

    id = fields.String(required=True)
    prefix = fields.String(required=True)
    minDigits = fields.Integer(attribute="min_digits", required=True)
    nextValue = fields.Integer(attribute="next_value", required=True,
                               metadata={"description": "The number the next draw uses; "
                                                        "every value below it was handed "
                                                        "out."})
    type = fields.String(allow_none=True)
    pattern = fields.Function(
        pattern_of, required=True,
        metadata={"type": "string",
                  "description": "Readable example: the value the next draw yields, the "
                                 "prefix followed by nextValue padded to minDigits digits "
                                 "(prefix SAM, minDigits 5, nextValue 1: SAM00001)."})


class SequenceInputSchema(WriteBackSchema):
    """``POST /api/sequence``: a sequence to add, or the fields of one to change."""

    id = fields.String(required=True, validate=WholeMatch(
        r"^[A-Za-z0-9_.\-]{1,64}$", error="1 to 64 letters, digits or _ . -"),
        metadata={"description": "An existing id updates that sequence; only the fields "
                                 "given change."})
    prefix = fields.String(validate=validate.Length(max=32),
                           metadata={"description": "default on create: empty"})
    minDigits = fields.Integer(attribute="min_digits", strict=True,
                               validate=validate.Range(min=1, max=18),
                               metadata={"description": "default on create: 5"})
    nextValue = fields.Integer(attribute="next_value", strict=True,
                               validate=validate.Range(min=1, max=MAX_NEXT_VALUE),
                               metadata={"description": "default on create: 1; on update it "
                                                        "may not go below the stored value "
                                                        "(409)"})
    type = fields.String(allow_none=True, validate=validate.Length(max=64))
    pattern = fields.String(dump_only=True)
