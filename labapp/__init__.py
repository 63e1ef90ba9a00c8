"""labapp: an on-premises laboratory data management service.

:func:`create_app` builds the application in a fixed order: settings → extensions →
blueprints → error handlers → CLI. Nothing is read or connected at import time.
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flask import Flask
from flask_migrate import Migrate
from werkzeug.middleware.proxy_fix import ProxyFix

from labapp.config import ensure_secret_key, load_settings
from labapp.db import configure_engine, create_sqlite_file, db, sqlite_path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
MIGRATIONS_DIR = PROJECT_ROOT / "migrations"

migrate = Migrate()


def create_app(overrides: Mapping[str, Any] | None = None) -> Flask:
    """Build the application; ``overrides`` maps setting names (without prefix) to values.

    Raises :class:`labapp.config.ConfigError` when a setting is invalid.
    """
    settings = load_settings(overrides)
    instance_path = Path(settings["INSTANCE_PATH"])
    app = Flask(__name__, instance_path=str(instance_path),
                template_folder=str(PROJECT_ROOT / "templates"),
                static_folder=str(PROJECT_ROOT / "static"))
    app.config.update(
        LABAPP=settings,
        SECRET_KEY=settings["SECRET_KEY"] or ensure_secret_key(instance_path),
        SQLALCHEMY_DATABASE_URI=settings["DATABASE_URL"],
        SQLALCHEMY_ENGINE_OPTIONS={"pool_pre_ping": True},
        MAX_CONTENT_LENGTH=settings["MAX_UPLOAD_MB"] * 1024 * 1024,
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=settings["SECURE_COOKIES"],
        SESSION_COOKIE_NAME="labapp_flash",
    )
    if settings["PROXY_COUNT"]:
        count = settings["PROXY_COUNT"]
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=count, x_proto=count)
    _init_extensions(app)
    _register_blueprints(app)
    _register_cli(app)
    return app


def _init_extensions(app: Flask) -> None:
    import labapp.model  # noqa: F401  (registers every table on the metadata)
    from labapp.errors import register_error_handlers
    from labapp.jsonprovider import LabJSONProvider
    from labapp.web.headers import init_security_headers
    from labapp.web.loader import init_auth

    app.json = LabJSONProvider(app)
    database_file = sqlite_path(app.config["SQLALCHEMY_DATABASE_URI"])
    if database_file is not None and not database_file.exists():
        create_sqlite_file(database_file)
    db.init_app(app)
    with app.app_context():
        configure_engine(app, db.engine)
    migrate.init_app(app, db, directory=str(MIGRATIONS_DIR), render_as_batch=True)
    register_error_handlers(app)
    init_auth(app)
    init_security_headers(app)
    _install_class_rules()


def _install_class_rules() -> None:
    """Give the entity batch the rules of the classes other features own."""
    from labapp.entities.rules import install
    from labapp.users.rules import UserRules

    install("User", UserRules())


def _register_blueprints(app: Flask) -> None:
    from labapp.account.api import bp as account_api
    from labapp.account.views import bp as account_views
    from labapp.entities.api import bp as entity_api
    from labapp.entities.views import bp as entity_views
    from labapp.files.api import bp as file_api
    from labapp.files.views import bp as file_views
    from labapp.grants.api import bp as grant_api
    from labapp.grants.views import bp as grant_views
    from labapp.query.api import bp as query_api
    from labapp.query.lookup_api import bp as query_lookup_api
    from labapp.sequences.api import bp as sequence_api
    from labapp.users.api import bp as user_api
    from labapp.users.views import bp as user_views
    from labapp.web.openapi import bp as openapi_bp
    from labapp.web.views import bp as web_views

    api = (account_api, user_api, grant_api, entity_api, file_api, sequence_api, query_api,
           query_lookup_api, openapi_bp)
    pages = (account_views, web_views, entity_views, file_views, grant_views, user_views)
    for blueprint in api + pages:
        app.register_blueprint(blueprint)


def _register_cli(app: Flask) -> None:
    from labapp.cli import init_command, users_cli
    from labapp.files.cli import files_cli

    app.cli.add_command(init_command)
    app.cli.add_command(users_cli)
    app.cli.add_command(files_cli)
