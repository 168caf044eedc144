"""The `review` verb: regrade a class and build a static site for the TAs.

``export`` reads the submissions (a Gradescope export, its zip, or any folder
of submission folders); ``batch`` grades each exactly as Gradescope does (the
same ``gradescope`` verb, in a process of its own, with its own secret run
key), on this machine or a Dask cluster, storing each result under a key of
the submission's content, the spec and the grader version so an interrupted
batch resumes; ``site`` renders the overview, the table, one page per
submission and the CSV exports from the stored results.
"""
from __future__ import annotations

from .export import ExportError, Submission, Submitter, read_submissions

__all__ = ["ExportError", "Submission", "Submitter", "read_submissions"]
