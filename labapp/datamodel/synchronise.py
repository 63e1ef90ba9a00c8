"""Synchronising the database with the data model: the one use case behind ``POST /api/sync``,
the Sync button of the diff page and ``flask --app labapp sync``."""
from __future__ import annotations

from typing import Any

from flask import Flask

from labapp.datamodel import service
from labapp.datamodel.running import apply_migrations, mark_synced, reload_model
from labapp.db import transaction
from labapp.search.rebuild import rebuild_index


def run_sync(app: Flask, progress: service.Progress | None = None) -> dict[str, Any]:
    """Re-read the extension files of ``app``, migrate, then sync in one transaction; answer
    the sync report (with ``searchIndex``: the rebuild's counts when the model changed).

    Raises :class:`~labapp.errors.AppError` (invalid extension files, a failed step) with
    nothing of the sync committed.
    """
    extensions = reload_model(app)
    applied = apply_migrations(app)
    with transaction():
        report = service.sync(str(app.extensions["migrate"].directory),
                              extensions.digest, progress=progress, migrations=applied)
    mark_synced(app)
    # Search documents hold only common fields, but a new model may bring classes whose
    # entities the index has never seen (restored or written before the sync).
    report["searchIndex"] = rebuild_index() if report["modelChanged"] else None
    return report
