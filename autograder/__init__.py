"""pallas-autograder: grades JAX Pallas kernels on every interpreter rung for Gradescope.

The public surface is small: the finding type and catalogue, spec loading, the
grade entry point, and ``KernelTestCase`` for an assignment's custom checks
(imported on first use). Importing this package does not import JAX.
"""
from .findings import CATALOGUE, RUNGS, Finding

__version__ = "0.1.0"

__all__ = ["CATALOGUE", "RUNGS", "Finding", "KernelTestCase", "__version__", "grade_submission",
           "load_assignment"]


def __getattr__(name: str):
    if name == "KernelTestCase":     # custom checks: ``from autograder import KernelTestCase``
        from .children.check_suite import KernelTestCase
        return KernelTestCase
    raise AttributeError(f"module 'autograder' has no attribute {name!r}")


def load_assignment(slug_or_folder: str):
    """An assignment by slug (bundled) or by folder path."""
    from pathlib import Path

    from .grading import assignments
    p = Path(slug_or_folder)
    return assignments.load(p) if (p / "spec.toml").is_file() else assignments.find(slug_or_folder)


def grade_submission(assignment, submission, cases: tuple[str, ...] = (), rungs: tuple[str, ...] = (),
                     **options):
    """Grade a submission path (only ``cases`` and ``rungs`` when given); returns
    a ``Report`` (see autograder.grading.report)."""
    from .grading import grade
    selection = grade.select(assignment, tuple(cases), tuple(rungs))
    return grade.grade(assignment, submission, grade.GradeOptions(selection=selection, **options))
