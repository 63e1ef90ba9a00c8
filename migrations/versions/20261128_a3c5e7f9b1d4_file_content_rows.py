"""file contents in the database (issue 34 §2)

``file_content`` (one row per stored SHA-256: its size and the number of its chunks) and
``file_content_chunk`` (the bytes, in pieces of 1 MiB), for ``LABAPP_FILE_STORE=database``
(``labapp/content_rows.py``, docs/decisions/file-store-setting.md). Both tables exist on
both databases, so the schema is one; only PostgreSQL gets the sequence that numbers
contents (the store is refused on SQLite) and stores the chunks uncompressed
(``STORAGE EXTERNAL``): most uploads are compressed already, and a Range request reads only
the TOAST pieces it needs.

Revision ID: a3c5e7f9b1d4
Revises: 9d4b6e2f8a13
Create Date: 2026-11-28

"""
import sqlalchemy as sa
from alembic import op

import labapp.model.types

# revision identifiers, used by Alembic.
revision = 'a3c5e7f9b1d4'
down_revision = '9d4b6e2f8a13'
branch_labels = None
depends_on = None

SEQUENCE = "file_content_id_seq"


def upgrade() -> None:
    op.create_table(
        "file_content",
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("content_id", sa.BigInteger(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("stored_utc", labapp.model.types.UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("sha256", name=op.f("pk_file_content")),
        sa.UniqueConstraint("content_id", name=op.f("uq_file_content_content_id")),
    )
    op.create_table(
        "file_content_chunk",
        sa.Column("content_id", sa.BigInteger(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("content_id", "seq", name=op.f("pk_file_content_chunk")),
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"CREATE SEQUENCE {SEQUENCE}")
        op.execute("ALTER TABLE file_content_chunk ALTER COLUMN data SET STORAGE EXTERNAL")


def downgrade() -> None:
    op.drop_table("file_content_chunk")
    op.drop_table("file_content")
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"DROP SEQUENCE {SEQUENCE}")
