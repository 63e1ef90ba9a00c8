"""The two encodings of ``POST /api/file`` (decisions §11), loaded into the same shape.

Both load into the keyword arguments of :func:`labapp.files.service.create_file` plus
``content``, a binary stream. Optional text fields left blank, as HTML forms send them, count
as absent; unknown fields are rejected. Lengths, the subject and access are checked when the
entity is created, by the same rules as every other entity.
"""
from __future__ import annotations

import base64
import binascii
from io import BytesIO
from typing import Any

from marshmallow import Schema, ValidationError, fields, post_load, pre_load
from werkzeug.datastructures import FileStorage

from labapp.files.service import clean_filename, media_type_for
from labapp.mediatypes import is_media_type


def _media_type(value: str) -> None:
    if not is_media_type(value):
        raise ValidationError("not a media type such as text/csv or image/png")


class Base64Content(fields.Field[Any]):
    """Standard base64 text (line breaks allowed) → a stream of the decoded bytes."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> BytesIO:
        if not isinstance(value, str):
            raise ValidationError("expected base64 text")
        text = value.replace("\r", "").replace("\n", "")
        if " " in text:
            # Form encoding turns an unescaped "+" into a space.
            raise ValidationError("is not valid base64: a '+' must be sent percent-encoded "
                                  "(%2B)")
        try:
            return BytesIO(base64.b64decode(text, validate=True))
        except (binascii.Error, ValueError):
            raise ValidationError("is not valid base64") from None


class FilePart(fields.Field[Any]):
    """A ``multipart/form-data`` file part with a file name."""

    def _deserialize(self, value: Any, attr: str | None, data: Any,
                     **kwargs: Any) -> FileStorage:
        if not isinstance(value, FileStorage) or not value.filename:
            raise ValidationError("expected a file part with a file name")
        return value


# What the document says of each field: the checks of the File entity the upload creates.
# Blank optional fields count as absent.
_NAME = {"maxLength": 255}
_MEDIA_TYPE = {"pattern": r"^(?:[!#$%&'*+\-.^_`|~0-9A-Za-z]+/[!#$%&'*+\-.^_`|~0-9A-Za-z]+|\s*)$",
               "description": "a media type such as text/csv"}
# Base64 with line breaks anywhere (they are dropped before decoding).
_B64 = r"[\r\n]*[A-Za-z0-9+/]"
_BASE64 = {"type": "string", "contentEncoding": "base64",
           "pattern": rf"^(?:(?:{_B64}){{4}})*(?:(?:{_B64}){{2}}[\r\n]*=[\r\n]*="
                      rf"|(?:{_B64}){{3}}[\r\n]*=)?[\r\n]*$"}


class _UploadFieldsSchema(Schema):
    """The text fields both encodings share."""

    name = fields.String(metadata=_NAME)
    media_type = fields.String(data_key="mediaType", validate=_media_type,
                               metadata=_MEDIA_TYPE)
    subject_id = fields.String(data_key="subjectID",
                               metadata={"maxLength": 64, "description": "the id of an entity"})
    file_type = fields.String(data_key="type", metadata={"maxLength": 64})
    description = fields.String()

    @pre_load
    def _drop_blank(self, data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {key: value for key, value in data.items()
                if key == "content" or not (isinstance(value, str) and not value.strip())}


class MultipartUploadSchema(_UploadFieldsSchema):
    """``multipart/form-data``: ``file`` required; ``name`` defaults to the part's file name
    (cleaned), ``mediaType`` to the part's content type or a guess from the name."""

    file = FilePart(required=True, metadata={"type": "string", "format": "binary"})

    @post_load
    def _complete(self, data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        part: FileStorage = data.pop("file")
        name = data.get("name") or clean_filename(part.filename or "")
        if not name:
            raise ValidationError("the file name of the upload is not usable; give a name",
                                  "name")
        media_type = data.get("media_type") or media_type_for(name, part.content_type)
        return {**data, "name": name, "media_type": media_type, "content": part.stream}


class Base64UploadSchema(_UploadFieldsSchema):
    """``application/x-www-form-urlencoded``: ``name`` and ``content`` (base64, may encode
    an empty file) required; ``mediaType`` defaults to a guess from the name."""

    name = fields.String(required=True, metadata={**_NAME, "pattern": r"\S",
                                                   "description": "not blank"})
    content = Base64Content(required=True, metadata=_BASE64)

    @post_load
    def _complete(self, data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {**data, "media_type": data.get("media_type") or media_type_for(data["name"],
                                                                               None)}
