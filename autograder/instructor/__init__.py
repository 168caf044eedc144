"""The instructor's verbs and what only they need: ``scaffold`` (``new``), ``check``,
``calibrate``, ``handout`` with its starter, notebook, public spec and reference page.
Left out of the student kit (a verb that imports this folder says so in ``cli``).
"""
