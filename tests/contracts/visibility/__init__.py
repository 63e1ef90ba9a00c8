"""The visibility matrix (decisions §5): a world of departments, projects, users, grants and
entities (:mod:`.world`), an independent oracle of the rule (:mod:`.oracle`), and the read
and write paths checked against it (:mod:`.paths`). ``tests/contracts/test_visibility_matrix.py``
runs every caller over every path; a new endpoint joins by appending a :class:`.paths.Path`.
"""
