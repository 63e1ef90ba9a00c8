"""The OData v4 face (``/odata``): service document, ``$metadata``, view feeds, Data feeds."""
