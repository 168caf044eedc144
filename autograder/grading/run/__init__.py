"""The run stage: every child run of one grading, planned in one place and carried out.

``plan`` (the typed ``Run``s), ``schedule`` (which run next), ``submission`` (the
student's files, read without running them), ``inputs``, ``draws`` and ``fills``
(what each run is given), ``calibration`` (time limits), ``tracing`` and
``execution`` (the two phases that talk to the children), ``custom_checks``.
"""
