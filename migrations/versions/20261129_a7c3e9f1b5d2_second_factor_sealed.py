"""second factor sealed: TOTP secrets are kept encrypted under SECRET_KEY

The column widens to hold a sealed value (``labapp.sealing``), and every secret kept in clear
until now is sealed under the application's ``SECRET_KEY`` (docs/decisions/sealed-secrets.md).

Revision ID: a7c3e9f1b5d2
Revises: d8b4f2a6c1e9
Create Date: 2026-11-29

"""
import warnings

import sqlalchemy as sa
from alembic import op

from labapp import sealing

# revision identifiers, used by Alembic.
revision = 'a7c3e9f1b5d2'
down_revision = 'd8b4f2a6c1e9'
branch_labels = None
depends_on = None

# labapp.auth.second_factor.PURPOSE as of this revision.
PURPOSE = b"labapp second factor v1"
_FACTORS = sa.table("second_factor", sa.column("user_id", sa.String),
                    sa.column("secret", sa.String))


def _rewrite(change) -> None:
    connection = op.get_bind()
    rows = connection.execute(sa.select(_FACTORS.c.user_id, _FACTORS.c.secret)).all()
    for user_id, secret in rows:
        connection.execute(sa.update(_FACTORS).where(_FACTORS.c.user_id == user_id)
                           .values(secret=change(secret)))


def _resize(before: sa.String, after: sa.String) -> None:
    """The secret column's type (SQLite copies the table). Reflecting it for the copy
    reflects the tables its foreign keys reach, and SQLite cannot reflect the expression
    indexes of ``entity``, which the copy does not touch."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Skipped unsupported reflection of expression-based "
                                "index")
        with op.batch_alter_table("second_factor") as batch:
            batch.alter_column("secret", existing_type=before, type_=after,
                               existing_nullable=False)


def upgrade():
    _resize(sa.String(64), sa.String(200))
    key = sealing.current_keys()[0]
    _rewrite(lambda secret: secret if sealing.is_sealed(secret)
             else sealing.seal(secret, key, PURPOSE))


def downgrade():
    keys = sealing.current_keys()
    _rewrite(lambda secret: sealing.unseal(secret, keys, PURPOSE)
             if sealing.is_sealed(secret) else secret)
    _resize(sa.String(200), sa.String(64))
