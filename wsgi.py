"""WSGI entry point for gunicorn: ``gunicorn -c python:labapp.serving wsgi:app``."""
from labapp import create_app

app = create_app()
