"""Querying: the ``$filter`` dialect (``filter.py``), the other OData options (``listing.py``)."""
