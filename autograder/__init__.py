"""pallas-autograder: grades JAX Pallas kernels on every interpreter rung for Gradescope.

The public surface is small: the finding type and catalogue, spec loading, and
the grade entry point. Importing this package does not import JAX.
"""
from .grading.findings import CATALOGUE, RUNGS, Finding

__version__ = "0.1.0"

__all__ = ["CATALOGUE", "RUNGS", "Finding", "__version__", "grade_submission", "load_assignment"]


def load_assignment(slug_or_folder: str):
    """An assignment by slug (bundled) or by folder path."""
    from pathlib import Path

    from . import spec
    p = Path(slug_or_folder)
    return spec.load(p) if (p / "spec.toml").is_file() else spec.find(slug_or_folder)


def grade_submission(assignment, submission, **options):
    """Grade a submission path; returns a Report (see autograder.grading.grade)."""
    from .grading import grade
    return grade.grade(assignment, submission, grade.GradeOptions(**options))
