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
from labapp.web.units import LabFlask

PROJECT_ROOT = Path(__file__).resolve().parent.parent
MIGRATIONS_DIR = PROJECT_ROOT / "migrations"

migrate = Migrate()


def create_app(overrides: Mapping[str, Any] | None = None) -> Flask:
    """Build the application; ``overrides`` maps setting names (without prefix) to values.

    Raises :class:`labapp.config.ConfigError` when a setting is invalid.
    """
    settings = load_settings(overrides)
    instance_path = Path(settings["INSTANCE_PATH"])
    app = LabFlask(__name__, instance_path=str(instance_path),
                   template_folder=str(PROJECT_ROOT / "templates"),
                   static_folder=str(PROJECT_ROOT / "static"))
    app.config.update(
        LABAPP=settings,
        SECRET_KEY=settings["SECRET_KEY"] or ensure_secret_key(instance_path),
        SECRET_KEY_FALLBACKS=list(settings["SECRET_KEY_FALLBACKS"] or ()),
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
        # Flask's documented way to add WSGI middleware; Flask types wsgi_app as a method.
        app.wsgi_app = ProxyFix(  # type: ignore[method-assign]
            app.wsgi_app, x_for=count, x_proto=count)
    _init_extensions(app)
    _register_blueprints(app)
    _register_cli(app)
    return app


def _init_extensions(app: Flask) -> None:
    import labapp.model  # noqa: F401  (registers every table on the metadata)
    from labapp.auth import ldap
    from labapp.auth.oidc import init_app as init_oidc
    from labapp.errors import register_error_handlers
    from labapp.jsonprovider import LabJSONProvider
    from labapp.odata.errors import init_odata_errors
    from labapp.users.directory import provision
    from labapp.web.headers import init_security_headers
    from labapp.web.loader import init_auth
    from labapp.web.ratelimits import init_app as init_rate_limits

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
    init_rate_limits(app)
    init_oidc(app)
    ldap.init_app(app, provision)
    init_security_headers(app)
    init_odata_errors(app)
    _install_class_rules(app)
    _install_place_picker(app)
    _init_search(app)
    _load_data_model(app)


def _install_place_picker(app: Flask) -> None:
    """Let the entity forms offer the places storage has room in (the forms cannot import
    storage: storage builds on the entity batch)."""
    from labapp.entities.editing import PLACE_PICKER, PlacePicker
    from labapp.storage.picker import free_slots, place_options

    app.extensions[PLACE_PICKER] = PlacePicker(places=place_options, free_slots=free_slots)


def _init_search(app: Flask) -> None:
    """Bind the search backend and keep it fed (:func:`labapp.search.indexer.init_app`). The
    Whoosh backend checks its workarounds first: the start fails loudly when Whoosh
    changed."""
    from labapp.search.indexer import init_app

    init_app(app)


def _load_data_model(app: Flask) -> None:
    """The model is the code plus the instance's extension files (decisions §14); a bad
    file stops the start-up with a message naming it and its field. Every request (static
    files aside) first follows a sync another worker made."""
    from flask import request

    from labapp.datamodel.running import follow_synced_model, load_model

    load_model(app)

    def follow_the_synced_model() -> None:
        if request.endpoint != "static":
            follow_synced_model(app)

    app.before_request(follow_the_synced_model)


def _install_class_rules(app: Flask) -> None:
    """Give the entity batch the rules of the classes other features own (this
    application's, in ``app.extensions``)."""
    from labapp.entities.rules import init_app, install, install_planner, observe_changes
    from labapp.grants.service import observe_grants
    from labapp.notifications.service import on_entity_change, on_grant
    from labapp.storage import placement
    from labapp.storage.rules import LocationRules
    from labapp.users.rules import UserRules

    init_app(app)
    with app.app_context():
        install("User", UserRules())
        install("Location", LocationRules())
        install_planner(placement.plan)
        observe_changes(on_entity_change)
        observe_grants(on_grant)


def _register_blueprints(app: Flask) -> None:
    from labapp.account.api import bp as account_api
    from labapp.account.oidc_views import bp as oidc_views
    from labapp.account.views import bp as account_views
    from labapp.changefeed.api import bp as change_api
    from labapp.dashboards.api import bp as dashboard_api
    from labapp.dashboards.views import bp as dashboard_views
    from labapp.dashboards.views import home as dashboard_home
    from labapp.datamodel.api import bp as datamodel_api
    from labapp.datamodel.views import bp as datamodel_views
    from labapp.entities.api import bp as entity_api
    from labapp.entities.views import bp as entity_views
    from labapp.files.api import bp as file_api
    from labapp.files.views import bp as file_views
    from labapp.grants.api import bp as grant_api
    from labapp.grants.views import bp as grant_views
    from labapp.notifications.api import bp as notification_api
    from labapp.notifications.views import bp as notification_views
    from labapp.odata.api import bp as odata_api
    from labapp.odata.views import bp as odata_views
    from labapp.query.api import bp as query_api
    from labapp.query.lookup_api import bp as query_lookup_api
    from labapp.savedviews.api import bp as saved_view_api
    from labapp.savedviews.views import bp as saved_view_views
    from labapp.search.api import bp as search_api
    from labapp.search.views import bp as search_views
    from labapp.sequences.api import bp as sequence_api
    from labapp.storage.api import bp as storage_api
    from labapp.storage.item_views import bp as storage_item_views
    from labapp.storage.views import bp as storage_views
    from labapp.users.api import bp as user_api
    from labapp.users.signin_views import bp as signin_views
    from labapp.users.views import bp as user_views
    from labapp.users.views import sign_in_bp as sign_in_views
    from labapp.web.health import bp as web_views
    from labapp.web.openapi import bp as openapi_bp

    api = (account_api, user_api, grant_api, entity_api, file_api, sequence_api, query_api,
           query_lookup_api, storage_api, openapi_bp, notification_api, dashboard_api,
           search_api, odata_api, datamodel_api, saved_view_api, change_api)
    pages = (account_views, oidc_views, web_views, entity_views, file_views, grant_views,
             user_views, signin_views,
             storage_views, storage_item_views, dashboard_views, notification_views,
             search_views, odata_views, datamodel_views, saved_view_views, sign_in_views)
    for blueprint in api + pages:
        app.register_blueprint(blueprint)
    _register_exports(app)
    _register_imports(app)
    _register_alerts(app)
    _register_webhooks(app)
    # The home page is the user's default dashboard (issue 12); every page links it as
    # web.home.
    app.add_url_rule("/", endpoint="web.home", view_func=dashboard_home)


def _register_webhooks(app: Flask) -> None:
    """Webhooks (issue 36 §3): their API and pages."""
    from labapp.webhooks.api import bp as webhook_api
    from labapp.webhooks.views import bp as webhook_views

    app.register_blueprint(webhook_api)
    app.register_blueprint(webhook_views)


def _register_alerts(app: Flask) -> None:
    """Alert rules (issue 23): their API, pages and ``flask alerts``."""
    from labapp.alerts.api import bp as alert_rule_api
    from labapp.alerts.cli import alerts_cli
    from labapp.alerts.views import bp as alert_views

    app.register_blueprint(alert_rule_api)
    app.register_blueprint(alert_views)
    app.cli.add_command(alerts_cli)


def _register_imports(app: Flask) -> None:
    """Spreadsheet imports (issue 22): their API, wizard and ``flask import``, and the
    ``/healthz`` check that a worker runs them."""
    from labapp.imports.api import bp as import_api
    from labapp.imports.cli import import_command
    from labapp.imports.views import bp as import_views
    from labapp.imports.workers import init_app

    init_app(app)
    app.register_blueprint(import_api)
    app.register_blueprint(import_views)
    app.cli.add_command(import_command)


def _register_exports(app: Flask) -> None:
    """Exports (issue 14): their API and administration page."""
    from labapp.exports.api import bp as export_api
    from labapp.exports.views import bp as export_views

    app.register_blueprint(export_api)
    app.register_blueprint(export_views)


def _register_cli(app: Flask) -> None:
    from labapp.cli import init_command, users_cli
    from labapp.datamodel.cli import sync_cli
    from labapp.exports.cli import restore_command, save_command
    from labapp.files.cli import files_cli
    from labapp.search.cli import search_cli
    from labapp.worker import worker_command

    app.cli.add_command(init_command)
    app.cli.add_command(users_cli)
    app.cli.add_command(files_cli)
    # `flask sync` brings the database in line with the data model; the exports' `save` and
    # `restore` are its subcommands (issue 14).
    sync_cli.add_command(save_command)
    sync_cli.add_command(restore_command)
    app.cli.add_command(sync_cli)
    app.cli.add_command(search_cli)
    app.cli.add_command(worker_command)
    search_cli.add_command(worker_command, "worker")  # the worker's old name, kept
