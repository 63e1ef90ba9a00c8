"""The read side every feature shares: a visible entity, its API form, a class by name and
the OData query options (below :mod:`labapp.query` and every feature)."""
