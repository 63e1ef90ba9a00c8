"""``/api/sequence``: list the id sequences, add or update one."""
from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify

from labapp.access.actor import ADMIN
from labapp.sequences import service
from labapp.sequences.schemas import SequenceInputSchema, SequenceSchema
from labapp.web.endpoints import endpoint
from labapp.web.loader import require_scope

bp = Blueprint("sequence_api", __name__, url_prefix="/api/sequence")


@bp.get("")
@endpoint("Every id sequence, sorted by id, with the pattern of its next value.",
          responses={200: SequenceSchema(many=True)})
def list_sequences() -> Response:
    return jsonify(SequenceSchema(many=True).dump(service.list_sequences()))


@bp.post("")
@require_scope(ADMIN)
@endpoint("Add a sequence, or change the given fields of one; nextValue may not go below "
          "its stored value (409).",
          body=SequenceInputSchema, problems=(409,),
          responses={200: SequenceSchema, 201: SequenceSchema})
def save_sequence(body: dict[str, Any]) -> tuple[Response, int]:
    values = dict(body)
    sequence_id = values.pop("id")
    sequence, created = service.save_sequence(sequence_id, values)
    return jsonify(SequenceSchema().dump(sequence)), 201 if created else 200
