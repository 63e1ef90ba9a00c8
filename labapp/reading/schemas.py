"""The query options every list-like endpoint shares, and the name of the OpenAPI component
listing the classes of the data model (built with the document, from the registry)."""
from __future__ import annotations

from typing import Any

from marshmallow import EXCLUDE, Schema, ValidationError, pre_load

ENTITY_CLASS = "EntityClass"


class ODataQuerySchema(Schema):
    """OData query options (names keep their ``$``). An unknown ``$`` option is an error;
    other parameters (cache busters and the like) are ignored."""

    class Meta:
        unknown = EXCLUDE

    @pre_load
    def reject_unknown_options(self, data: Any, **_kwargs: Any) -> Any:
        known = {field.data_key or name for name, field in self.fields.items()}
        unknown = sorted(key for key in data if key.startswith("$") and key not in known)
        if unknown:
            raise ValidationError({key: ["Unknown query option."] for key in unknown})
        return data
