"""where users sign in (issue 35, decisions §19)

``app_user.auth_source``: ``local``, ``ldap`` or ``oidc:<provider>``; ``external_id``: the
directory's name for the user (an LDAP DN, an OIDC subject), unique per source. The User
view (migration e2b2e5c79bf7) gains ``auth_source``; ``external_id`` stays out of it, as the
API leaves it out.

Revision ID: 5a7c9e1b3d2f
Revises: b7e1c3d5f9a2
Create Date: 2026-11-29

"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = '5a7c9e1b3d2f'
down_revision = 'b7e1c3d5f9a2'
branch_labels = None
depends_on = None


ENTITY_COLUMNS = ("id", "eclass", "name", "description", "barcode", "status", "type", "user_id",
                  "department_id", "project_id", "attributes", "created_by", "created_utc",
                  "modified_by", "modified_utc", "version")
USER_COLUMNS = ("email", "initials", "is_active", "last_login_utc")


def _user_view(extra: tuple[str, ...]) -> None:
    """Make the User view again with the user table's columns and ``extra``."""
    name = '"v_User"' if op.get_bind().dialect.name == "sqlite" else '"User"'
    selected = [f'CAST(e."{column}" AS TEXT) AS "{column}"' if column == "attributes"
                else f'e."{column}"' for column in ENTITY_COLUMNS]
    selected += [f't."{column}"' for column in (*USER_COLUMNS, *extra)]
    op.execute(f"DROP VIEW IF EXISTS {name}")
    op.execute(f'CREATE VIEW {name} AS SELECT {", ".join(selected)} FROM "app_user" t '
               'JOIN "entity" e ON e."id" = t."id"')


def upgrade() -> None:
    # Plain ADD COLUMN, no batch copy: SQLite would drop app_user's triggers with the table.
    op.add_column("app_user", sa.Column("auth_source", sa.String(length=80), nullable=False,
                                        server_default="local"))
    op.add_column("app_user", sa.Column("external_id", sa.String(length=512), nullable=True))
    op.create_index("ix_app_user_external", "app_user", ["auth_source", "external_id"],
                    unique=True)
    _user_view(("auth_source",))


def downgrade() -> None:
    _user_view(())
    op.drop_index("ix_app_user_external", table_name="app_user")
    op.drop_column("app_user", "external_id")
    op.drop_column("app_user", "auth_source")
