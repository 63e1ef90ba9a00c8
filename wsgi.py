"""WSGI entry point for gunicorn: ``gunicorn wsgi:app``."""
from labapp import create_app

app = create_app()
