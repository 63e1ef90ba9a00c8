"""The web shell: the request → Actor loader, API endpoint declarations, the OpenAPI
document, page helpers, the home page and the health check."""
