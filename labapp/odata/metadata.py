"""The service document and the CSDL ``$metadata`` of the OData feed (decisions §13).

Both describe the database views of :mod:`labapp.query.dbviews` and nothing else: one
EntityType (key ``id``) and one EntitySet per view, named like the view. Registry types map to
EDM types here and nowhere else; ``attributes`` (JSON) is served as its JSON text, an
``Edm.String``, so every OData client can read it.
"""
from __future__ import annotations

from functools import cache
from typing import Any
from xml.etree import ElementTree as ET

from labapp.model.registry import generation
from labapp.query.dbviews import ViewColumn, ViewSpec, views

NAMESPACE = "labapp"
CONTAINER = "Container"
EDMX = "http://docs.oasis-open.org/odata/ns/edmx"
EDM = "http://docs.oasis-open.org/odata/ns/edm"
KEY = "id"

EDM_TYPES = {"str": "Edm.String", "ref": "Edm.String", "text": "Edm.String",
             "json": "Edm.String", "int": "Edm.Int64", "float": "Edm.Double",
             "bool": "Edm.Boolean", "date": "Edm.Date", "datetime": "Edm.DateTimeOffset"}


def edm_type(column: ViewColumn) -> str:
    """The EDM type of a view column."""
    return EDM_TYPES[column.type]


def feed_views() -> list[ViewSpec]:
    """The views served as EntitySets, in the order the service document lists them (the
    flat views of extension classes included, decisions §14)."""
    return list(views().values())


def service_document(metadata_url: str) -> dict[str, Any]:
    """The v4 service document: the metadata URL as context and every view's EntitySet."""
    return {"@odata.context": metadata_url,
            "value": [{"name": view.name, "kind": "EntitySet", "url": view.name}
                      for view in feed_views()]}


def csdl() -> bytes:
    """The CSDL XML 4.0 document (the same for every caller: rows are filtered, not types),
    made again when the data model changed (a sync brought extension classes)."""
    return _csdl(generation())


@cache
def _csdl(_generation: int) -> bytes:
    ET.register_namespace("edmx", EDMX)
    root = ET.Element(f"{{{EDMX}}}Edmx", Version="4.0")
    services = ET.SubElement(root, f"{{{EDMX}}}DataServices")
    schema = ET.SubElement(services, f"{{{EDM}}}Schema", Namespace=NAMESPACE)
    for view in feed_views():
        entity_type = ET.SubElement(schema, f"{{{EDM}}}EntityType", Name=view.name)
        key = ET.SubElement(entity_type, f"{{{EDM}}}Key")
        ET.SubElement(key, f"{{{EDM}}}PropertyRef", Name=KEY)
        for column in view.columns:
            attributes = {"Name": column.name, "Type": edm_type(column)}
            if column.name == KEY:
                attributes["Nullable"] = "false"
            ET.SubElement(entity_type, f"{{{EDM}}}Property", attributes)
    container = ET.SubElement(schema, f"{{{EDM}}}EntityContainer", Name=CONTAINER)
    for view in feed_views():
        ET.SubElement(container, f"{{{EDM}}}EntitySet", Name=view.name,
                      EntityType=f"{NAMESPACE}.{view.name}")
    ET.register_namespace("", EDM)
    document: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return document
