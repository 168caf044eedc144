"""Uploads an honest kernel beside 3,000 small files in nested folders (made
at run time by the test), hoping the grader's copy or listing never ends."""
from honest_add import honest_add as add  # noqa: F401
