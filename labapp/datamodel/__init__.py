"""The data model a lab owns: expected, actual, diff, sync, and its administration pages."""
