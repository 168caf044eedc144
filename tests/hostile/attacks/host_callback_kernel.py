"""Computes the answer in Python through jax.pure_callback, wrapped around a
kernel so the jaxpr still holds a pallas_call. Host callbacks carry Python the
grader would have to run for the student: the traced program is refused, and
every test says the work is not done in a kernel."""
import jax
import numpy as np

from honest_add import honest_add


def add(x, y):
    out = honest_add(x, y)
    return jax.pure_callback(lambda a, b, o: np.asarray(a) + np.asarray(b), jax.ShapeDtypeStruct(x.shape, x.dtype),
                             x, y, out)
