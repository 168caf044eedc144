"""The interpreters' output for the TPU stage's check: the same rebuilt program
on the same inputs, on CPU (the generic interpreter), in this process (which
never runs student code: the program is a checked document)."""
from __future__ import annotations

import numpy as np


def generic(program: bytes, args: list, dtypes: list[str]) -> np.ndarray:
    """``args``: float32 arrays (values exact in ``dtypes``) and floats (static:
    part of the program, as in the grader's child, so not passed to it)."""
    import jax

    from ...grading.run.inputs import numpy_dtype
    args = [np.asarray(a).astype(numpy_dtype(d)) for a, d in zip(args, dtypes) if not isinstance(a, float)]
    from ...pallas_surface.program import rebuild, schema
    from ...pallas_surface.rungs import hooks, rung
    # A student's pl.debug_check is a plain check on the interpreter (rung's rewrite), which
    # XLA:CPU lowers only with this config on (as in the grader's child).
    hooks.install_runtime_checks()
    fn = rebuild.load(schema.loads(program)).function()
    with jax.default_device(jax.devices("cpu")[0]):
        traced = rung.trace(fn, args)
        out = rung.run(traced, args, "generic")
    out = out[0] if isinstance(out, (list, tuple)) else out
    return np.asarray(out, dtype=np.float64)
