"""The TPU stage for one kernel: check it on the chip, then time it so that
replaying, caching or a lucky run cannot help.

1. The check case: compile, run on inputs made on the device, compare with the
   float64 reference and with the interpreters' output on the same inputs. A
   compiler refusal is ``chip-reject``; a chip output that misses the reference
   where the interpreters' matches is ``chip-divergence`` (both outputs kept).
2. Each timed size: warm-up calls on a separate input stream, then timed
   calls, each on fresh inputs made on the device from a secret seed, until
   ``timing.measure``'s rule holds; each timed output is digested on the
   device (a secret random projection); after the run a sample of calls,
   chosen then, is checked against the reference of that call's own inputs.
3. Anomaly gates hold a result for review instead of ranking it: faster than
   the roofline floor, more than 10x the solution, noisy, or a timed output
   that does not match its inputs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal

import numpy as np

from ..grading.compare import compare
from ..grading.inputs import numpy_dtype
from ..spec import Assignment
from ..speed.grade import geometric_mean
from ..speed.model import roofline_floor
from . import timing
from .device import ChipReject, Compiled, Device, DeviceInfo, InputSpec, Kernel, projection

Status = Literal["timed", "held", "chip-reject", "chip-divergence", "wrong-result", "not-queued", "error"]
SLOWER_THAN_SOLUTION = 10.0


@dataclass(frozen=True)
class SizeTime:
    size: str
    median_s: float
    rse: float
    calls: int
    stopped: str
    source: str                        # "profiler" (device time) or "wall" (an upper bound)
    compile_s: float
    floor_s: float                     # the roofline floor at this size on this chip
    checked: tuple[int, ...] = ()      # timed calls whose outputs were checked
    mismatched: tuple[int, ...] = ()
    wall_median_s: float = 0.0         # wall clock around each call (the upper bound)


@dataclass(frozen=True)
class StageResult:
    submission: str
    status: Status
    message: str = ""
    sizes: tuple[SizeTime, ...] = ()
    holds: tuple[str, ...] = ()
    evidence: dict = field(default_factory=dict, compare=False)

    @property
    def seconds(self) -> float | None:
        """Geometric mean of the sizes' medians."""
        return geometric_mean([s.median_s for s in self.sizes])

    def to_json(self) -> dict:
        from dataclasses import asdict
        return {**asdict(self), "seconds": self.seconds}


@dataclass(frozen=True)
class Context:
    """Everything the stage needs besides the kernel's programs."""
    assignment: Assignment
    device: Device
    info: DeviceInfo
    reference: Callable[..., np.ndarray]
    interpret: Callable[[bytes, list, list], np.ndarray]   # (program, args, dtypes) -> interpreters' output
    secret: int
    rule: timing.Rule = timing.Rule()
    solution: dict[str, float] = field(default_factory=dict)   # size -> the solution's median
    flops: dict[str, float] = field(default_factory=dict)      # size -> the work's flops (floor)
    evidence_dir: Path | None = None   # where a divergence's inputs and both outputs are kept


def seed(secret: int, *words: Any) -> int:
    """A seed no submission can predict: the secret mixed with where it is used."""
    import hashlib
    text = [int.from_bytes(hashlib.sha256(str(w).encode()).digest()[:8], "little") for w in words]
    return int(np.random.SeedSequence([secret, *text]).generate_state(2, np.uint64)[0] >> 1)


def kernel(a: Assignment, name: str, program: bytes, dims: dict[str, int], dtype: str) -> Kernel:
    """The kernel's signature at one size, from the spec."""
    from ..spec import Case
    case = Case(name, tuple(sorted(dims.items())), dtype, 0, 0.0, params=a.cases[0].params)
    params = dict(case.params)
    specs = tuple(InputSpec("float", value=float(params[i.name])) if i.kind == "float" else
                  InputSpec("array", a.shape(i.shape, case), a.dtype_of(i.dtype, case), i.distribution, i.scale)
                  for i in a.inputs)
    return Kernel(name, program, specs, a.output_shape(case), a.dtype_of(a.output.dtype, case))


def _reduction(a: Assignment, dims: dict[str, int]) -> int:
    """The reduction length at ``dims`` (the tolerance's atol grows with its square root)."""
    return dims.get(a.reduction_dim, 1) if a.reduction_dim else 1


def _host_args(values: list) -> list:
    return [v if isinstance(v, float) else np.asarray(v, dtype=np.float32) for v in values]


def check(ctx: Context, sub: str, k: Kernel, dims: dict[str, int], dtype: str) -> StageResult | None:
    """The check case on the chip; None when the chip's output is right."""
    a = ctx.assignment
    try:
        compiled = ctx.device.compile(k)
    except ChipReject as e:
        return StageResult(sub, "chip-reject", str(e)[:3000], evidence={"kernel": k.name})
    x = ctx.device.inputs(compiled, seed(ctx.secret, sub, k.name, "check"))
    out = np.asarray(ctx.device.fetch(ctx.device.run(compiled, x)), dtype=np.float64)
    args = _host_args(ctx.device.fetch(x))
    ref = np.asarray(ctx.reference(*args), dtype=np.float64)
    tol = a.tolerance(dtype)
    red = _reduction(a, dims)
    chip = compare(out, ref, tol, red, a.numerics_bound)
    if chip.ok:
        return None
    interp = np.asarray(ctx.interpret(k.program, args, [i.dtype for i in k.inputs]), dtype=np.float64)
    ok_interp = compare(interp, ref, tol, red, a.numerics_bound).ok
    worst = np.unravel_index(int(np.nanargmax(np.where(np.isfinite(out), np.abs(out - ref), np.inf))), ref.shape)
    evidence = {"kernel": k.name, "index": [int(i) for i in worst], "chip": float(out[worst]),
                "interpreters": float(interp[worst]), "reference": float(ref[worst]),
                "mismatches": int(chip.mismatches), "size": int(ref.size)}
    if ctx.evidence_dir is not None:
        evidence["files"] = _keep(ctx.evidence_dir, sub, args, out, interp, ref)
    if ok_interp:
        return StageResult(sub, "chip-divergence", "the chip's output differs from the float64 reference "
                           "where the interpreters' output on the same inputs matches it", evidence=evidence)
    return StageResult(sub, "wrong-result", "the kernel's output is wrong on the chip and on the "
                       "interpreters for these inputs", evidence=evidence)


def _keep(folder: Path, sub: str, args: list, chip, interp, ref) -> str:
    """Inputs and both outputs as .npy (an upstream bug report needs them)."""
    import hashlib
    where = folder / hashlib.sha256(sub.encode()).hexdigest()[:16]
    where.mkdir(parents=True, exist_ok=True)
    for i, a in enumerate(args):
        if not isinstance(a, float):
            np.save(where / f"input{i}.npy", a, allow_pickle=False)
    for name, arr in (("chip", chip), ("interpreters", interp), ("reference", ref)):
        np.save(where / f"{name}.npy", arr, allow_pickle=False)
    return str(where)


def _digest_ok(digest: np.ndarray, ref: np.ndarray, key: int, a: Assignment, dtype: str, red: int) -> bool:
    """Is the digested output within tolerance of the reference, through the projection?"""
    tol = a.tolerance(dtype)
    flat = ref.reshape(-1, ref.shape[-1]) if ref.ndim else ref.reshape(1, 1)
    r = projection(key, flat.shape[-1])
    allowed = tol.atol * math.sqrt(max(red, 1)) + tol.rtol * np.abs(flat)
    # float32 rounding of the projection on the device, generously
    bound = allowed @ np.abs(r) + 2.0 ** -20 * flat.shape[-1] * (np.abs(flat) @ np.abs(r)) + 1e-6
    return bool(np.all(np.abs(digest - flat @ r) <= bound))


def time_size(ctx: Context, sub: str, compiled: Compiled, size: str, dims: dict, dtype: str) -> SizeTime:
    dev, rule = ctx.device, ctx.rule
    for w in range(rule.warmup):
        dev.run(compiled, dev.inputs(compiled, seed(ctx.secret, sub, size, "warmup", w)))
    key = seed(ctx.secret, sub, size, "digest")
    digests: list[np.ndarray] = []
    sources: set[str] = set()

    def call(i: int) -> float:
        x = dev.inputs(compiled, seed(ctx.secret, sub, size, "timed", i))
        t = dev.time(compiled, x)
        digests.append(dev.digest(t.output, key))       # outside the timed region
        sources.add(t.source)
        return t.seconds
    samples = timing.measure(call, rule)
    median, spread, source = samples.median, samples.rse, "wall" if "wall" in sources else "profiler"
    # Device time from a profiler trace, on as many fresh input sets, where there is one.
    batch = [dev.inputs(compiled, seed(ctx.secret, sub, size, "profiled", i))
             for i in range(min(len(samples.times), rule.profiled))]
    profiled = dev.device_times(compiled, batch)
    if profiled:
        median, spread, source = float(np.median(profiled)), timing.rse(profiled), "profiler"
    picker = np.random.default_rng(seed(ctx.secret, sub, size, "sample"))   # chosen after the run
    picks = sorted(int(i) for i in picker.choice(len(digests), min(rule.sample, len(digests)), replace=False))
    a = ctx.assignment
    red = _reduction(a, dims)
    bad = []
    for i in picks:
        args = _host_args(dev.fetch(dev.inputs(compiled, seed(ctx.secret, sub, size, "timed", i))))
        if not _digest_ok(digests[i], np.asarray(ctx.reference(*args), np.float64), key, a, dtype, red):
            bad.append(i)
    floor = _floor(compiled.kernel, ctx.info, ctx.flops.get(size, 0.0))
    return SizeTime(size, median, spread, len(samples.times), samples.stopped, source, compiled.compile_s, floor,
                    tuple(picks), tuple(bad), samples.median)


def _floor(k: Kernel, info: DeviceInfo, flops: float) -> float:
    """The roofline floor: every input read once and the output written once at
    full bandwidth, or the work at the chip's peak, whichever is longer."""
    nbytes = sum(int(np.prod(s.shape)) * numpy_dtype(s.dtype).itemsize for s in k.inputs if s.kind == "array")
    nbytes += int(np.prod(k.output_shape)) * numpy_dtype(k.output_dtype).itemsize
    return roofline_floor(nbytes, flops, info.hbm_bytes_per_s, info.bf16_flops_per_s)


def holds(sizes: tuple[SizeTime, ...], solution: dict[str, float],
          rule: timing.Rule = timing.DEFAULT) -> tuple[str, ...]:
    """The anomaly gates a timed result trips (each holds it for review)."""
    out = []
    for s in sizes:
        if s.mismatched:
            out.append(f"output-check: at {s.size}, timed calls {list(s.mismatched)} returned outputs that do "
                       "not match their own inputs' reference (a replayed or cached result, or wrong at this size)")
        if s.median_s < s.floor_s:
            out.append(f"faster-than-roofline: at {s.size}, {s.median_s * 1e3:.4f} ms is below the chip's floor "
                       f"of {s.floor_s * 1e3:.4f} ms")
        if s.size in solution and s.median_s > SLOWER_THAN_SOLUTION * solution[s.size]:
            out.append(f"slow: at {s.size}, {s.median_s / solution[s.size]:.1f}x the solution's time "
                       f"(more than {SLOWER_THAN_SOLUTION:g}x)")
        if rule.noisy(s.stopped, s.rse):
            out.append(f"noisy: at {s.size}, the relative standard error is {s.rse:.1%} after {s.calls} calls "
                       "(the cap)")
    return tuple(out)


def run(ctx: Context, sub: str, programs: dict[str, bytes]) -> StageResult:
    """The whole stage for one kernel (``programs``: size name or ``check:<case>`` -> program)."""
    a = ctx.assignment
    check_name = next((n for n in programs if n.startswith("check:")), None)
    if check_name is not None:
        case = a.case(check_name.split(":", 1)[1])
        failed = check(ctx, sub, kernel(a, check_name, programs[check_name], case.dim_map, case.dtype),
                       case.dim_map, case.dtype)
        if failed is not None:
            return failed
    sizes = []
    for size in a.speed.sizes:
        if size.name not in programs:
            return StageResult(sub, "error", f"no traced program at the size {size.name!r}")
        dims = dict(size.dims)
        try:
            compiled = ctx.device.compile(kernel(a, size.name, programs[size.name], dims, size.dtype))
        except ChipReject as e:
            return StageResult(sub, "chip-reject", str(e)[:3000], evidence={"kernel": size.name})
        sizes.append(time_size(ctx, sub, compiled, size.name, dims, size.dtype))
    found = holds(tuple(sizes), ctx.solution, ctx.rule)
    return StageResult(sub, "held" if found else "timed", "", tuple(sizes), found)
