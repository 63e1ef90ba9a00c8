"""Imports of spreadsheets into one class: reading, mapping, dry run, commit (issue 22)."""
