"""Uploads an honest kernel beside a 3 GB file (the test makes it sparse at run
time), hoping the grader reads or copies it all."""
from honest_add import honest_add as add  # noqa: F401
