"""A bare Flask application, the floor of :mod:`bench.request_cost`: one route answering a
small JSON document, no database, no authentication, served by the same gunicorn settings
(``-c python:labapp.serving``) as the application."""
from __future__ import annotations

from flask import Flask, Response, jsonify

PATH = "/bare"


def create_app() -> Flask:
    """The bare application (``gunicorn "bench.bare:create_app()"``)."""
    app = Flask(__name__)

    @app.get(PATH)
    def bare() -> Response:
        return jsonify({"id": "SAM000001", "eClass": "Sample", "name": "bare"})

    @app.get("/healthz")
    def healthz() -> Response:
        return jsonify({"status": "ok"})

    return app
