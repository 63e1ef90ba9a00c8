"""``/api/sync/save`` and ``/api/sync/files``: write, list and download exports (ADMIN on an
on-premises installation). ``POST /api/sync`` itself belongs to the data model feature."""
from __future__ import annotations

from flask import Blueprint, Response, current_app, jsonify, send_file

from labapp.access.actor import ADMIN_ON_PREMISES
from labapp.blobs import content_of
from labapp.db import db
from labapp.errors import Conflict
from labapp.exports import progress, service
from labapp.exports.schemas import ExportInfoSchema, ExportResultSchema
from labapp.web.endpoints import endpoint
from labapp.web.loader import require_scope

bp = Blueprint("export_api", __name__, url_prefix="/api/sync")


def instance_path() -> str:
    path: str = current_app.config["LABAPP"]["INSTANCE_PATH"]
    return path


@bp.post("/save")
@require_scope(ADMIN_ON_PREMISES)
@endpoint("Write a consistent export of every entity, grant, sequence, dashboard, "
          "notification, audit event and file (with its content) to the instance's sync/ "
          "folder as gzip-compressed JSON lines (docs/export-format.md).",
          responses={201: ExportResultSchema}, problems=(409,))
def save() -> tuple[Response, int]:
    try:
        with progress.holding(instance_path(), db.engine):
            result = service.save_export(db.engine, instance_path(), content_of)
    except progress.ExportRunning as running:
        raise Conflict("Another export is under way; try again when it has finished.",
                       code="export_running") from running
    return jsonify(ExportResultSchema().dump(result)), 201


@bp.get("/files")
@require_scope(ADMIN_ON_PREMISES)
@endpoint("The exports of the sync/ folder, newest first.",
          responses={200: ExportInfoSchema(many=True)})
def list_files() -> Response:
    return jsonify(ExportInfoSchema(many=True).dump(service.list_exports(instance_path())))


@bp.get("/files/<path:filename>")
@require_scope(ADMIN_ON_PREMISES)
@endpoint("Download one export (application/gzip); 404 for any name that is not an export "
          "of the sync/ folder.", responses={200: "The export file"})
def download(filename: str) -> Response:
    path = service.export_path(instance_path(), filename)
    response = send_file(path, mimetype="application/gzip", as_attachment=True,
                         download_name=path.name, conditional=True)
    response.cache_control.private = True
    return response
