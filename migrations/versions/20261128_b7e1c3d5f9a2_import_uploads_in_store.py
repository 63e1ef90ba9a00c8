"""import uploads in the file store (issue 34 §2)

``import_pending``: the import wizard's uploads waiting for their mapping step when contents
live in the database (``LABAPP_FILE_STORE=database``), so any host may serve that step.
``ix_import_job_sha256``: ``files gc`` keeps every content an import job names.

Revision ID: b7e1c3d5f9a2
Revises: 3e9a5c7d2f14
Create Date: 2026-11-28

"""
import sqlalchemy as sa
from alembic import op

import labapp.model.types

# revision identifiers, used by Alembic.
revision = 'b7e1c3d5f9a2'
down_revision = '3e9a5c7d2f14'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "import_pending",
        sa.Column("token", sa.String(length=32), nullable=False),
        sa.Column("owner_id", sa.String(length=64), nullable=False),
        sa.Column("eclass", sa.String(length=32), nullable=False),
        sa.Column("filename", sa.String(length=255), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("suffix", sa.String(length=8), nullable=False),
        sa.Column("created_utc", labapp.model.types.UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["owner_id"], ["app_user.id"],
                                name=op.f("fk_import_pending_owner_id_app_user"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("token", name=op.f("pk_import_pending")),
    )
    op.create_index(op.f("ix_import_pending_sha256"), "import_pending", ["sha256"])
    op.create_index("ix_import_job_sha256", "import_job", ["sha256"])


def downgrade() -> None:
    op.drop_index("ix_import_job_sha256", table_name="import_job")
    op.drop_index(op.f("ix_import_pending_sha256"), table_name="import_pending")
    op.drop_table("import_pending")
