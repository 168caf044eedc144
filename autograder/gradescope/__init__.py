"""What Gradescope runs, and grading as it does: ``run`` (the ``gradescope`` verb behind
``run_autograder``), ``local`` (the ``grade`` verb on your own machine), ``build`` (the
autograder zip), ``rate_limit`` and ``install`` (setup.sh's confinement check).
"""
