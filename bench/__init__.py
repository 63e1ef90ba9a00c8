"""Benchmarks: the entity API against raw SQLAlchemy Core on the same database, in one run.

``python -m bench`` (or ``make bench``) seeds entities on SQLite and PostgreSQL and reports
ratios against a baseline measured in the same run. Each run's whole report goes into a
dated file under ``bench/runs/`` and its verdict onto ``bench/RESULTS.md``, the page of
current verdicts (:mod:`bench.results`). Nothing here asserts a time: performance is a
ratio, never a timed test.
"""
