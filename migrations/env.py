"""Alembic environment: runs migrations on the Flask app's own engine (``db.engine``)."""
import logging
from logging.config import fileConfig

from alembic import context
from flask import current_app

from labapp.model.types import UtcDateTime
from labapp.schema import compared_in_schema, compared_object

config = context.config
if config.config_file_name is not None:
    # Keep the application's loggers working when migrations run inside it.
    fileConfig(config.config_file_name, disable_existing_loggers=False)
logger = logging.getLogger("alembic.env")

target_db = current_app.extensions["migrate"].db
config.set_main_option(
    "sqlalchemy.url",
    target_db.engine.url.render_as_string(hide_password=False).replace("%", "%%"))


def run_migrations_offline() -> None:
    """Emit the migration SQL for the configured URL without connecting."""
    context.configure(url=config.get_main_option("sqlalchemy.url"),
                      target_metadata=target_db.metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Run the migrations over a connection of ``db.engine``."""

    def process_revision_directives(_context, _revision, directives):
        # Never write an empty migration when autogenerate finds no change.
        if getattr(config.cmd_opts, "autogenerate", False) and directives[0].upgrade_ops.is_empty():
            directives[:] = []
            logger.info("No changes in schema detected.")

    def render_item(type_, obj, autogen_context):
        # Migrations stay free of application imports: UtcDateTime is stored as DateTime.
        if type_ == "type" and isinstance(obj, UtcDateTime):
            return "sa.DateTime()"
        return False

    conf_args = dict(current_app.extensions["migrate"].configure_args)
    conf_args.setdefault("render_item", render_item)
    conf_args.setdefault("process_revision_directives", process_revision_directives)
    conf_args.setdefault("compare_type", True)
    conf_args.setdefault("include_name", compared_in_schema)
    conf_args.setdefault("include_object", compared_object)
    with target_db.engine.connect() as connection:
        context.configure(connection=connection, target_metadata=target_db.metadata,
                          **conf_args)
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
