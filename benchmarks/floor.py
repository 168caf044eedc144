"""The floor of a grading: the same interpreter executions, bare, in one process.

    python benchmarks/floor.py solutions/matmul.py matmul [--run-key K]

Builds the grading's own plan (every correctness and probe run, same run key)
and runs each run a passing kernel gets (not the in-order and fill reruns the
schedule keeps for a hang or a wrong output) directly: JAX imported once, the
submission imported as a module, each input signature traced once, each run
executed with the same interpreter parameters and fills (the same executable
reuse the child has), static analyses called. No child process, no sandbox,
no event protocol, no files, no reference, no diagnosis. Prints one JSON
object: wall and CPU seconds, and seconds per check.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("submission", type=Path)
    p.add_argument("assignment")
    p.add_argument("--run-key", type=int, default=1)
    args = p.parse_args()
    t0, c0 = time.perf_counter(), _cpu()
    from autograder.children.grader import _analysis as analyse
    from autograder.grading import assignments, grade
    from autograder.grading.run import inputs, plan as plan_mod
    from autograder.pallas_surface.rungs import hooks, rung

    hooks.install()
    import jax
    import jax.numpy as jnp
    a = assignments.find(args.assignment)
    plan = grade.make_plan(a, grade.GradeOptions(run_key=args.run_key),
                           grade._timing(a, grade.GradeOptions()))
    module_spec = importlib.util.spec_from_file_location(Path(a.entry_file).stem, args.submission)
    module = importlib.util.module_from_spec(module_spec)
    sys.path.append(str(args.submission.parent))
    module_spec.loader.exec_module(module)
    fn = getattr(module, a.entry_function)
    startup = time.perf_counter() - t0
    executables, traces, by_check = rung.Executables(), {}, {}
    for run in plan.runs:
        if run.in_order or run.probe == plan_mod.UNWRITTEN:
            # The schedule runs these only to explain a hang or a wrong output
            # (schedule.next_run): a kernel that passes never pays for them.
            continue
        t = time.perf_counter()
        case = run.draw.case
        if run.draw.abstract:    # shapes only, as the child gets them
            args_ = [dict(case.params)[i.name] if i.kind == "float" else
                     jax.ShapeDtypeStruct(a.shape(i.shape, case), jnp.dtype(a.dtype_of(i.dtype, case)))
                     for i in a.inputs]
        else:
            args_ = [v.value if v.kind == "float" else jnp.asarray(v.array, jnp.dtype(v.dtype))
                     for v in inputs.make(a, case, run.draw.seed)]
        static = [i for i, inp in enumerate(a.inputs) if inp.kind == "float"]
        if run.draw.signature not in traces:
            traces[run.draw.signature] = rung.trace(fn, args_, static)
        traced = traces[run.draw.signature]
        arrays = [x for i, x in enumerate(args_) if i not in static]
        if run.kind == "static":
            analyse(run.analysis, traced, arrays)
        else:
            order = [] if run.record else None
            fill = run.fill.to_child() if run.fill is not None else None
            with hooks.switches(run.rung, run.params_dict, fill, order, run.races) as static:
                executables.run(traced, arrays, run.rung, static, run.in_order)
            rung.reset_state()
        key = run.probe or "correctness"
        by_check[key] = round(by_check.get(key, 0.0) + time.perf_counter() - t, 3)
    print(json.dumps({"wall_s": round(time.perf_counter() - t0, 3), "cpu_s": round(_cpu() - c0, 3),
                      "startup_s": round(startup, 3), "runs": len(plan.runs), "seconds_by_check": by_check}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
