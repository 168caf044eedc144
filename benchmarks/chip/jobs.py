"""Chip-worker jobs of the chip check (``benchmarks/chip_check.py``): each runs in
a chip worker (``autograder.tpu.chip.worker``), gets the worker's device, its
arguments and a progress callback, and returns plain data.

- ``device_time``: one kernel at one size, through the TPU stage's own device
  code (traced as a grading traces a submission, written as the grader's
  checked program, rebuilt and compiled by ``JaxDevice``): compile time, then
  the device time of each of ``calls`` calls from the profiler's trace.
- ``outcome``: one solution or corpus file at the assignment's visible cases:
  what the chip did (refused, and the compiler's message; a right or wrong
  output against the float64 reference). A halt or a hang ends the worker; the
  parent records it.
- ``numerics``: how far the chip's transcendentals and products are from
  float64, element-wise, over the ranges the assignments feed them.
"""
from __future__ import annotations

import importlib.util
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent.parent


def _module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _function(file: str, function: str, entry_file: str | None = None):
    """The function ``function`` of ``file`` (a notebook is read as the grader reads one)."""
    path = (REPO / file).resolve()
    if path.suffix == ".ipynb":
        from autograder.grading.run import submission
        work = Path(tempfile.mkdtemp(prefix="chip-nb-"))
        loc = submission.locate(path, entry_file or f"{function}.py", work)
        path = loc.module_file
    name = "chipcheck_" + "".join(c if c.isalnum() else "_" for c in file)
    return getattr(_module(path, name), function)


def _point_function(args: dict):
    if args.get("builder"):
        sys.path.insert(0, str(REPO))
        from benchmarks.chip import kernels
        return kernels.build(args["builder"], **args["params"])
    return _function(args["file"], args["function"]), args["inputs"]


def device_time(device, args: dict, progress) -> dict:
    """One point: {"id", "builder"+"params" | "file"+"function"+"inputs", "calls"}."""
    from autograder.tpu.chip.device import ChipReject, CompileFailed
    pid, calls = args["id"], int(args.get("calls", 10))
    t0 = time.perf_counter()
    progress(phase="trace", point=pid)
    from autograder.tpu import onchip
    fn, inputs = _point_function(args)
    k = onchip.kernel(pid, fn, inputs)
    progress(phase="compile", point=pid)
    try:
        c = device.compile(k)
    except ChipReject as e:
        return {"id": pid, "status": "refused", "message": str(e)[:4000]}
    except CompileFailed as e:
        return {"id": pid, "status": "compile-failed", "message": str(e)[:4000]}
    progress(phase="run", point=pid)
    x = device.inputs(c, 12345)
    for _ in range(2):
        device.run(c, x)
    with device.profile(c) as trace:
        walls = [device.time(c, x).seconds for _ in range(calls)]
    got = trace.result(calls)
    return {"id": pid, "status": "timed" if got.times else "no-device-time", "device_s": list(got.times or ()),
            "why": got.why, "wall_s": walls, "compile_s": c.compile_s, "job_s": time.perf_counter() - t0}


def outcome(device, args: dict, progress) -> dict:
    """One file of an assignment at each visible case: {"slug", "file", "assignments"} (the code
    `pallas-autograder on-chip` runs for a student: autograder/tpu/onchip.py)."""
    from autograder.grading import assignments
    from autograder.tpu import onchip
    a = assignments.find(args["slug"], Path(args["assignments"]))
    return onchip.file_outcome(device, a, (REPO / args["file"]).resolve(), progress)


# -- numerics ----------------------------------------------------------------

UNARY = {
    "exp": (lambda j: j.exp, np.exp, (-30.0, 30.0)),
    "log": (lambda j: j.log, np.log, (1e-3, 1e3)),
    "tanh": (lambda j: j.tanh, np.tanh, (-8.0, 8.0)),
    "logistic": (lambda j: (lambda x: 1 / (1 + j.exp(-x))), lambda x: 1 / (1 + np.exp(-x)), (-20.0, 20.0)),
    "reciprocal": (lambda j: (lambda x: 1.0 / x), lambda x: 1.0 / x, (0.01, 100.0)),
    "rsqrt": (lambda j: (lambda x: 1.0 / j.sqrt(x)), lambda x: 1.0 / np.sqrt(x), (0.01, 100.0)),
    "sqrt": (lambda j: j.sqrt, np.sqrt, (0.0, 100.0)),
    "exp2": (lambda j: j.exp2, np.exp2, (-30.0, 30.0)),
    "log1p": (lambda j: j.log1p, np.log1p, (-0.5, 10.0)),
    "sin": (lambda j: j.sin, np.sin, (-10.0, 10.0)),
    "erf": (lambda j: (lambda x: __import__("jax").lax.erf(x)), None, (-4.0, 4.0)),
}


def _unary(device, name: str, interpret: bool) -> dict:
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl
    jfn, nfn, (lo, hi) = UNARY[name]
    op = jfn(jnp)

    def kernel(x_ref, o_ref):
        o_ref[...] = op(x_ref[...])
    x = np.linspace(lo, hi, 512 * 1024, dtype=np.float32).reshape(512, 1024)
    f = jax.jit(pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, jnp.float32), grid=(4,),
                               in_specs=[pl.BlockSpec((128, 1024), lambda i: (i, 0))],
                               out_specs=pl.BlockSpec((128, 1024), lambda i: (i, 0)), interpret=interpret))
    got = np.asarray(f(jnp.asarray(x)), np.float64)
    if nfn is None:
        import math
        want = np.vectorize(math.erf)(x.astype(np.float64))
    else:
        want = nfn(x.astype(np.float64))
    return _errors(got, want)


def _errors(got: np.ndarray, want: np.ndarray) -> dict:
    err = np.abs(got - want)
    rel = err / np.maximum(np.abs(want), np.finfo(np.float32).tiny)
    ulp = err / np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    finite = np.isfinite(want)
    return {"max_abs": float(err[finite].max()), "max_rel": float(rel[finite & (np.abs(want) > 1e-30)].max()),
            "median_rel": float(np.median(rel[finite])), "max_ulp": float(ulp[finite].max()),
            "nonfinite": int((~np.isfinite(got) & finite).sum())}


def _dot(device, precision: str | None, dtype: str, n: int, interpret: bool) -> dict:
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl
    prec = {None: None, "highest": jax.lax.Precision.HIGHEST}[precision]

    def kernel(x_ref, y_ref, o_ref):
        o_ref[...] = jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32, precision=prec)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((n, n)).astype(np.float32)
    y = rng.standard_normal((n, n)).astype(np.float32)
    if dtype == "bfloat16":
        import ml_dtypes
        x = x.astype(ml_dtypes.bfloat16).astype(np.float32)
        y = y.astype(ml_dtypes.bfloat16).astype(np.float32)
    f = jax.jit(pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((n, n), jnp.float32), interpret=interpret))
    got = np.asarray(f(jnp.asarray(x, jnp.dtype(dtype)), jnp.asarray(y, jnp.dtype(dtype))), np.float64)
    import ml_dtypes
    rx = x.astype(ml_dtypes.bfloat16).astype(np.float64)
    ry = y.astype(ml_dtypes.bfloat16).astype(np.float64)
    exact = x.astype(np.float64) @ y.astype(np.float64)
    out = {"vs_float64": _errors(got, exact), "vs_bf16_rounded": _errors(got, rx @ ry)}
    out["scale"] = float(np.abs(exact).max())
    return out


def numerics(device, args: dict, progress) -> dict:
    """Element-wise errors of the chip's transcendentals, and of a kernel's
    products at each precision, against float64."""
    interpret = device.platform != "tpu"
    out: dict = {"unary": {}, "dot": {}}
    for name in UNARY:
        progress(phase="run", what=name)
        try:
            out["unary"][name] = _unary(device, name, interpret)
        except Exception as e:  # noqa: BLE001 - an op the chip refuses is a fact too
            out["unary"][name] = {"error": f"{type(e).__name__}: {e}"[:800]}
    for precision, dtype in ((None, "float32"), ("highest", "float32"), (None, "bfloat16")):
        progress(phase="run", what=f"dot {precision} {dtype}")
        try:
            out["dot"][f"{dtype}:{precision or 'default'}"] = _dot(device, precision, dtype, 1024, interpret)
        except Exception as e:  # noqa: BLE001
            out["dot"][f"{dtype}:{precision or 'default'}"] = {"error": f"{type(e).__name__}: {e}"[:800]}
    return out


def env(device, args: dict, progress) -> dict:
    """What the host runs: Python, JAX, libtpu, the device and the packages."""
    import platform
    from importlib import metadata

    import jax
    pkgs = sorted(f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions())
    return {"python": sys.version, "libc": platform.libc_ver(), "jax": jax.__version__,
            "devices": [str(d) for d in jax.devices()], "kind": jax.devices()[0].device_kind,
            "packages": pkgs}
