"""`pallas-autograder on-chip FILE -a SLUG`: what a real TPU does with your kernel,
at the assignment's visible cases, where one is at hand (a Colab TPU runtime, a
TPU VM). Your own check, never the grade: the grade is computed on the
interpreters, and this verb changes nothing in it.

For each visible case the kernel is traced as a grading traces it, written as the
grader's checked program, rebuilt and compiled by the TPU compiler (Mosaic), run on
the case's inputs (the grader's own draw, run key 1) and compared with the float64
reference (float32 products at default precision may instead match the reference
of bfloat16-rounded inputs, as the TPU stage allows). It says what the chip did:
refused (and the compiler's words), ran and matched, or ran and differed. A kernel
that halts the chip's
core ends its process's use of the chip: the verb says so, and a new process (a
restarted runtime) gets it back. The chip check (``benchmarks/chip_check.py``,
its ``outcomes`` phase) runs the same code over every corpus kernel.

It runs in the calling process, on the student's own machine, on the student's
own file: unlike grading, nothing here is isolated, and nothing here is trusted.
"""
from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..spec import Assignment

NOT_THE_GRADE = ("Your own check on a real TPU: not the grade (the grade is computed on the interpreters, "
                 "and this changes nothing in it).")


def load_function(path: Path, a: Assignment) -> Callable:
    """The entry function of a .py file or a notebook (read as the grader reads one)."""
    if path.suffix == ".ipynb":
        from ..grading.run import submission
        loc = submission.locate(path, a.entry_file, Path(tempfile.mkdtemp(prefix="on-chip-")))
        if not hasattr(loc, "module_file"):
            raise ValueError(f"{path}: not a notebook the grader can read")
        path = loc.module_file
    name = "on_chip_" + "".join(c if c.isalnum() else "_" for c in path.stem)
    found = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(found)
    sys.modules[name] = module
    found.loader.exec_module(module)
    return getattr(module, a.entry_function)


def kernel(name: str, fn: Callable, signature: list) -> Any:
    """The kernel as the TPU stage compiles it: the checked program of ``fn`` traced at
    ``signature`` ([shape, dtype] pairs, or {"float": v} for a static float)."""
    import json

    import jax
    import jax.numpy as jnp

    from ..pallas_surface.program import serial
    from ..pallas_surface.rungs import rung
    from .chip.device import InputSpec, Kernel
    args, static, specs = [], [], []
    for i, item in enumerate(signature):
        if isinstance(item, dict):
            args.append(float(item["float"]))
            static.append(i)
            specs.append(InputSpec("float", value=float(item["float"])))
        else:
            args.append(jax.ShapeDtypeStruct(tuple(item[0]), jnp.dtype(item[1])))
            specs.append(InputSpec("array", tuple(item[0]), item[1]))
    traced = rung.trace(fn, args, static)
    program = json.dumps(serial.encode(traced, set())).encode()
    out = traced.closed.out_avals[0]
    return Kernel(name, program, tuple(specs), tuple(out.shape), str(out.dtype))


def judge(a: Assignment, case, out: np.ndarray, host: list, reference: Callable, bf16_dots: int) -> dict:
    """Right against the float64 reference, or (float32 products at default precision, which a TPU
    computes from bfloat16-rounded operands) against the reference of the rounded inputs within the
    bfloat16 tolerance, as the TPU stage allows."""
    from ..grading.judge import compare as cmp
    from ..grading.run import inputs as ins
    red = dict(case.dims).get(a.reduction_dim, 1) if a.reduction_dim else 1
    ref = np.asarray(reference(*host), np.float64)
    if ref.shape != out.shape:
        return {"status": "wrong-output", "message": f"output shape {out.shape}, reference {ref.shape}"}
    got = cmp.compare(out, ref, a.tolerance(case), red, a.numerics_bound)
    row = {"status": "right" if got.ok else "wrong", "verdict": got.verdict, **got.evidence()}
    if got.ok or not bf16_dots:
        return row
    rounded = [v if isinstance(v, float) else ins.round_to(v, "bfloat16") for v in host]
    tol = dict(a.tolerances).get("bfloat16", a.tolerance(case))
    alt = cmp.compare(out, np.asarray(reference(*rounded), np.float64), tol, red, a.numerics_bound)
    if alt.ok:
        return {**row, "status": "right", "against": "bf16-rounded inputs", "rounded": alt.evidence()}
    return {**row, "rounded": alt.evidence()}


def case_outcome(device, a: Assignment, case, fn: Callable, reference: Callable,
                 progress: Callable[..., None] = lambda **_: None) -> dict:
    """What the chip did with ``fn`` at one case."""
    from ..grading.run import inputs as ins
    from .chip.device import ChipReject, CompileFailed, OutputMismatch
    made = ins.make(a, case, ins.entropy(case, 1, 1))
    sig = [{"float": m.value} if m.kind == "float" else [list(m.array.shape), m.dtype] for m in made]
    row: dict = {"case": case.name}
    try:
        k = kernel(case.name, fn, sig)
    except Exception as e:  # noqa: BLE001 - tracing raised: the kernel's own error
        return {**row, "status": "not-traced", "message": f"{type(e).__name__}: {e}"[:1500]}
    progress(phase="compile", case=case.name)
    try:
        c = device.compile(k)
    except ChipReject as e:
        return {**row, "status": "refused", "message": str(e)[:3000]}
    except CompileFailed as e:
        return {**row, "status": "compile-failed", "message": str(e)[:3000]}
    progress(phase="call", case=case.name)
    x = [m.value if m.kind == "float" else _on_device(m.array, m.dtype) for m in made]
    try:
        out = np.asarray(device.fetch(device.run(c, x)), np.float64)
    except OutputMismatch as e:
        return {**row, "status": "wrong-output", "message": str(e)[:1500]}
    except Exception as e:  # noqa: BLE001 - the run raised (a failing pl.debug_check on the stand-in)
        if getattr(device, "platform", "tpu") == "tpu":
            raise       # on a chip an error in the run is a halted core: the caller says so and starts afresh
        from ..pallas_surface.rungs.rung import unwrap_error
        kind, text = unwrap_error(e)          # the error behind XLA's callback wrapper
        return {**row, "status": "raised", "message": f"{kind}: {text}"[:1500]}
    host = [m.array if m.kind == "array" else m.value for m in made]
    return {**row, **judge(a, case, out, host, reference, c.bf16_dots), "compile_s": c.compile_s,
            "bf16_dots": c.bf16_dots}


def _on_device(array: np.ndarray, dtype: str):
    import jax.numpy as jnp
    return jnp.asarray(array, dtype=jnp.dtype(dtype))


def file_outcome(device, a: Assignment, path: Path, progress: Callable[..., None] = lambda **_: None) -> dict:
    """Every visible case of ``a`` for the kernel in ``path``."""
    from ..grading.run.draws import load_reference
    reference = load_reference(a)
    progress(phase="trace", file=str(path))
    try:
        fn = load_function(path, a)
    except BaseException as e:  # noqa: BLE001 - the file's own failure is its outcome
        if isinstance(e, KeyboardInterrupt):
            raise
        return {"status": "not-loaded", "message": f"{type(e).__name__}: {e}"[:2000], "cases": []}
    cases = [case_outcome(device, a, c, fn, reference, progress) for c in a.cases if not c.secret]
    return {"status": "ran", "cases": cases}


def describe(row: dict) -> str:
    """One case's outcome in words."""
    st = row["status"]
    if st == "right":
        extra = " (against the reference of bfloat16-rounded inputs: the chip computes float32 products at " \
                "default precision from bfloat16-rounded operands)" if row.get("against") else ""
        return f"compiled and ran; the output matches the float64 reference{extra}"
    if st == "wrong":
        return (f"compiled and ran; {row.get('mismatches')} of {row.get('total')} outputs differ from the float64 "
                f"reference (largest error {row.get('max_abs_error')})")
    if st == "refused":
        return f"refused by the TPU compiler: {row.get('message', '')}"
    return f"{st}: {row.get('message', '')}"


def check(path: Path, slug: str, assignments: Path | None = None) -> str:
    """The report for ``path`` on the chip this process sees (in this process: a notebook's cell)."""
    from ..grading.assignments import find
    from .chip.real import JaxDevice
    a = find(slug, assignments)
    device = JaxDevice("tpu")
    if device.info() is None:
        return (f"No TPU here ({device.absent()}). On Colab: Runtime > Change runtime type > a TPU, then install "
                f'"jax[tpu]=={a.jax}" and run this again. The grade never needs one.')
    lines = [NOT_THE_GRADE, f"Chip: {device.info().label}, JAX {device.info().jax}."]
    try:
        got = file_outcome(device, a, Path(path))
    except Exception as e:  # noqa: BLE001 - a halted core surfaces here: said, with what to do
        from ..pallas_surface import release
        text = f"{type(e).__name__}: {e}"
        if release.CHIP_HALT.search(text):
            return "\n".join(lines + ["The chip halted its core while running your kernel (an out-of-bounds block "
                                      "or DMA index, or a DMA started and never waited): this process can no "
                                      "longer use the chip; restart the runtime before anything else.",
                                      text[:1500]])
        raise
    if got["status"] != "ran":
        return "\n".join(lines + [f"Your file did not load: {got['message']}"])
    lines += [f"- case {row['case']}: {describe(row)}" for row in got["cases"]]
    return "\n".join(lines)


def add_arguments(p) -> None:
    p.add_argument("file", type=Path, help="your kernel file (.py or .ipynb)")
    p.add_argument("--assignment", "-a", required=True, help="assignment slug (see `list`)")


def run(args) -> int:
    print(check(args.file, args.assignment, args.assignments))
    return 0
