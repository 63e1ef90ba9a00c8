"""search documents in PostgreSQL (issue 34 §1)

``search_document``: one row per entity for the PostgreSQL search backend
(``LABAPP_SEARCH_BACKEND=postgresql``, labapp/search/postgresql.py): its class, its access
labels and the words labapp's analyser makes of it (identifiers and their parts, word pairs)
as a ``tsvector``, with GIN indexes on the words and the labels. The backend writes the rows
in the transaction of each change; ``flask --app labapp search rebuild`` fills the table
from the entities. Created on PostgreSQL only (SQLite installs search with Whoosh); it stays
empty while the Whoosh backend is in use.

Revision ID: 9d4b6e2f8a13
Revises: 7b1d3f5a9c20
Create Date: 2026-11-28

"""
from alembic import op

# revision identifiers, used by Alembic.
revision = '9d4b6e2f8a13'
down_revision = '7b1d3f5a9c20'
branch_labels = None
depends_on = None


def upgrade():
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("CREATE TABLE search_document ("
               "entity_id varchar(64) PRIMARY KEY, "
               "eclass varchar(64) NOT NULL, "
               "labels varchar[] NOT NULL, "
               "words tsvector NOT NULL)")
    op.execute("CREATE INDEX ix_search_document_words ON search_document USING gin (words)")
    op.execute("CREATE INDEX ix_search_document_labels ON search_document USING gin (labels)")


def downgrade():
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP TABLE search_document")
