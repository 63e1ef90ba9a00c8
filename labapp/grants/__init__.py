"""Granting departments and projects: the service, the API and the administration pages."""
