"""Ships modules named like the grader's dependencies (numpy.py, json.py,
jax.py, autograder.py) beside an honest kernel, hoping the grader or the
child imports them instead of the real ones."""
from honest_add import honest_add as add  # noqa: F401
