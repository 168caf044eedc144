"""The programs that run as other users, each a ``python -m`` entry point named here.

- ``tracer``: the only process that imports student code (as the student
  user); it traces the entry function and writes each program as data.
- ``grader``: the grader's child (a user of its own); it rebuilds the checked
  programs and runs every rung and probe on them. No student code.
- ``check_suite``: the instructor's custom checks, inside the grader's child
  (and ``check`` lists their tests through it).

The parent starts them by these names (``isolation.confinement.python_command``);
a test imports each, so a renamed module fails there rather than inside a child.
Nothing in this file imports JAX.
"""
TRACER = "autograder.children.tracer"
GRADER = "autograder.children.grader"
CHECK_SUITE = "autograder.children.check_suite"
ENTRY_POINTS = (TRACER, GRADER, CHECK_SUITE)
