"""What a profiler trace costs on a chip, per way of tracing and of reading it.

The TPU stage times a kernel's calls under one ``jax.profiler`` trace and
reads each call's device time from it. On the v5e (chip call F) the stage
spent about 10 s of each matmul kernel at 8192^3 between the end of its ten
timed calls and its first check: the profiler's stop and the reading of the
trace. This measures the two apart, for the stage's profiler options and
for variants, and the two ways of reading (every event's stats, or only the
"XLA Modules" line of the device planes).

Run on the chip's host (plain JAX and libtpu; of the project's, only the chip points' kernels):

    python3 benchmarks/chip/profile_trace.py -o OUT/profile.json

It writes one JSON object: per variant, the seconds to stop and to read,
the events per plane and line, and the module's executions found (each way
of reading must find every call, or the variant is no use to the stage).
"""
from __future__ import annotations

import argparse
import glob
import json
import sys
import tempfile
import time
from pathlib import Path

SIZE = 8192
CALLS = 10
BLOCK = 128


def _matmul():
    """The matmul solution's tiling (the chip points' builder): (128, 128) tiles, K innermost."""
    import jax
    sys.path[:0] = [str(Path(__file__).resolve().parent.parent.parent)]
    from benchmarks.chip import kernels
    fn, _inputs = kernels.matmul(SIZE, SIZE, SIZE, BLOCK, BLOCK, BLOCK)
    return jax.jit(fn)


def _options(variant: dict):
    import jax
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = variant.get("python", 0)
    options.host_tracer_level = variant.get("host", 1)
    if "advanced" in variant:
        options.advanced_configuration = variant["advanced"]
    return options


def _read(path: str, module: str, lines_only: bool) -> tuple[float, int, dict]:
    """(seconds, executions of ``module`` found, events per plane/line)."""
    from jax.profiler import ProfileData
    t0 = time.perf_counter()
    found, counts = 0, {}
    for plane in ProfileData.from_file(path).planes:
        for line in plane.lines:
            if lines_only and line.name != "XLA Modules":
                continue
            n = 0
            for e in line.events:
                n += 1
                if not lines_only:
                    dict(e.stats)
                if e.name == module or e.name.startswith(module + "("):
                    found += 1
            counts[f"{plane.name} | {line.name}"] = n
    return time.perf_counter() - t0, found, counts


def measure(fn, args, module: str, variant: dict) -> dict:
    import jax
    row: dict = {"variant": variant}
    with tempfile.TemporaryDirectory(prefix="profile-trace-") as folder:
        try:
            jax.profiler.start_trace(folder, profiler_options=_options(variant))
        except Exception as e:  # noqa: BLE001 - a variant this release refuses is a result
            return {**row, "error": f"start: {type(e).__name__}: {e}"[:500]}
        t0 = time.perf_counter()
        for _ in range(CALLS):
            jax.block_until_ready(fn(*args))
        row["calls_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        jax.profiler.stop_trace()
        row["stop_s"] = time.perf_counter() - t0
        files = glob.glob(f"{folder}/**/*.xplane.pb", recursive=True)
        if not files:
            return {**row, "error": "no trace written"}
        import os
        row["trace_bytes"] = os.path.getsize(files[0])
        row["read_all_s"], row["found_all"], counts = _read(files[0], module, lines_only=False)
        row["read_lines_s"], row["found_lines"], _ = _read(files[0], module, lines_only=True)
        row["events"] = {k: v for k, v in sorted(counts.items(), key=lambda kv: -kv[1])[:12]}
    return row


VARIANTS = (
    {"name": "stage (python 0, host 1)"},
    {"name": "host 0", "host": 0},
    {"name": "TRACE_ONLY_XLA", "advanced": {"tpu_trace_mode": "TRACE_ONLY_XLA"}},
    {"name": "TRACE_ONLY_HOST", "advanced": {"tpu_trace_mode": "TRACE_ONLY_HOST"}},
    {"name": "stage again (python 0, host 1)"},
)


def main() -> None:
    import jax
    import jax.numpy as jnp
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--out", required=True)
    out = parser.parse_args().out
    fn = _matmul()
    kx, ky = jax.random.split(jax.random.key(0))
    args = [jax.random.normal(kx, (SIZE, SIZE), jnp.bfloat16), jax.random.normal(ky, (SIZE, SIZE), jnp.bfloat16)]
    exe = fn.lower(*args).compile()
    import re
    module = re.match(r"\s*HloModule\s+([^\s,]+)", exe.as_text()).group(1)
    jax.block_until_ready(fn(*args))
    rows = []
    for variant in VARIANTS:
        rows.append(measure(fn, args, module, variant))
        print(json.dumps(rows[-1])[:600], flush=True)
        with open(out, "w") as f:
            json.dump({"module": module, "size": SIZE, "calls": CALLS, "jax": jax.__version__,
                       "device": str(jax.devices()[0].device_kind), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
