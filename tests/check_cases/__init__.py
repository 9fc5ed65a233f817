"""One module per ``mha_lib.checks`` topic, each with ``ROWS``: ``(check, a correct function, [(bug, case), ...])``.

``bug`` is a wrong function a learner might write; ``case`` the number of the first case it must fail (1-based).
``tests/test_checks.py`` runs the same tests over every row of every module here.
"""
