"""Benchmarks: the entity API against raw SQLAlchemy Core on the same database, in one run.

``python -m bench`` (or ``make bench``) seeds entities on SQLite and PostgreSQL and reports
ratios against a baseline measured in the same run; see ``bench/RESULTS.md``. Nothing here
asserts a time: performance is a ratio, never a timed test.
"""
