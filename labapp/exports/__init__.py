"""Exports of the whole database and their restore (issue 14, "Exports")."""
