"""The web shell: home page and health check."""
