"""The TPU stage for one kernel: check it on the chip, then time it so that
replaying, caching, a lucky run or a wrong answer at the timed size cannot help.

1. The check case: compile, run on inputs made on the device, compare with the
   float64 reference and with the interpreters' output on the same inputs. A
   compiler refusal is ``chip-reject``; a chip output that misses the reference
   where the interpreters' matches is ``chip-divergence`` (both outputs kept).
   Float32 products inside a kernel at default precision take bfloat16-rounded
   operands on a TPU (``pallas_surface.precision``): for such a kernel the chip
   may instead match the reference of its inputs rounded to bfloat16, within
   the bfloat16 tolerance (what it computes when the kernel is right).
2. Each timed size: warm-up calls on a separate input stream, then timed
   calls, each on fresh inputs made on the device from a secret seed, until
   ``timing.measure``'s rule holds, all under one profiler trace that gives
   each of those calls' device time. Every timed output is digested on the
   device (a secret random projection); after the run three calls are checked
   against the reference of their own inputs: one of them element by element
   (its output kept), the others through their digests. The calls checked are
   calls timed, and secret: the run draws three call indices among the first
   ``min_calls`` (certain to happen) per size, the same for every kernel, and
   each kernel's own secret draw, before its run, says which of the three is
   checked element by element. Call i at a size gets the same secret inputs in
   every kernel of one run (``References``), so the float64 references of the
   three are computed once per run, not three times per kernel (at matmul's
   8192^3, 6-8 s each on a v5e host). Nothing a kernel does reaches another's
   run, and none sees the secret, so sharing gives nothing away: a kernel that
   is wrong on some of its calls is caught as often as with its own draw.
3. Anomaly gates hold a result for review instead of ranking it: faster than
   the roofline floor, more than 10x the solution, noisy, a timed output that
   does not match its inputs, or timed on another clock than the solution.
"""
from __future__ import annotations

import functools
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal

import numpy as np

from ...grading.judge.compare import compare
from ...grading.run.inputs import numpy_dtype, round_to
from ...spec import Assignment
from ...speed.grade import geometric_mean
from ...speed.model import roofline_floor
from ..chip.device import (
    SEED_BITS,
    ChipReject,
    Compiled,
    CompileFailed,
    Device,
    DeviceInfo,
    DeviceTimes,
    InputSpec,
    Kernel,
)
from . import timing
from .checks import CHUNK, SIGMAS, Expected, close, digest_bound, digest_ok, norms, within  # noqa: F401
from .references import References

# chip-halt and chip-hang come from the worker's process (tpu.chipproc), not from here.
Status = Literal["timed", "held", "chip-reject", "chip-divergence", "wrong-result", "not-queued", "error",
                 "chip-halt", "chip-hang"]
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
    floor_s: float                     # the roofline floor at this size on this chip (0: unknown figures)
    checked: tuple[int, ...] = ()      # timed calls whose outputs were checked (the first element-wise)
    mismatched: tuple[int, ...] = ()
    wall_median_s: float = 0.0         # wall clock around each call (the upper bound)
    clock_note: str = ""               # why the profiler gave no device time, where it gave none


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


def from_json(d: dict) -> StageResult:
    """A StageResult back from its JSON (a chip worker's answer)."""
    sizes = tuple(SizeTime(**{**s, "checked": tuple(s.get("checked", ())),
                              "mismatched": tuple(s.get("mismatched", ()))}) for s in d.get("sizes", ()))
    return StageResult(d["submission"], d["status"], d.get("message", ""), sizes, tuple(d.get("holds", ())),
                       dict(d.get("evidence") or {}))


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
    solution: dict[str, SizeTime] = field(default_factory=dict)   # size -> the solution's timing there
    flops: dict[str, float] = field(default_factory=dict)         # size -> the work's flops (floor)
    evidence_dir: Path | None = None   # where a divergence's inputs and both outputs are kept
    # Told what the stage is doing (a chip worker relays it to the parent, which
    # gives each phase its own silence limit and prints progress): phase "compile",
    # "call" (the chip), "host" (references and interpreters on the host), with details.
    progress: Callable[..., None] = field(default=lambda **_: None, compare=False)
    references: References = field(default_factory=References, compare=False)


def seed(secret: int, *words: Any) -> int:
    """A 32-bit seed no submission can predict: the secret mixed with where it
    is used (32 bits: what jax.random.key keeps, so every device draws the same)."""
    import hashlib
    text = [int.from_bytes(hashlib.sha256(str(w).encode()).digest()[:8], "little") for w in words]
    return int(np.random.SeedSequence([secret, *text]).generate_state(1, np.uint32)[0]) % 2 ** SEED_BITS


def checked_calls(ctx: Context, size: str) -> tuple[int, ...]:
    """The timed calls checked at ``size`` in every kernel of the run: ``rule.sample`` secret
    indices among the first ``rule.min_calls`` (their references are computed once a run)."""
    n = max(ctx.rule.min_calls, 1)
    rng = np.random.default_rng(seed(ctx.secret, size, "checked"))
    return tuple(sorted(int(i) for i in rng.choice(n, min(max(ctx.rule.sample, 1), n), replace=False)))


def timed_seed(ctx: Context, size: str, i: int) -> int:
    """The inputs of timed call ``i`` at ``size``: the same in every kernel of the run (``References``)."""
    return seed(ctx.secret, size, "timed", i)


def kernel(a: Assignment, name: str, program: bytes, dims: dict[str, int], dtype: str) -> Kernel:
    """The kernel's signature at one size, from the spec."""
    from ...spec import Case
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


def expectations(ctx: Context, args: list | Callable[[], list], dtype: str, compiled: Compiled,
                 shared: tuple | None = None) -> list[Expected]:
    """What a right kernel's output on this chip may be: the float64 reference
    within the case's tolerance, its relative part widened for the
    transcendentals the kernel uses by what this chip was measured to lose on
    them (``chip_numerics``); and, when the kernel has float32 products the
    chip rounds to bfloat16, the reference of the inputs rounded to bfloat16
    within the bfloat16 tolerance (the spec's, else the case's).

    ``args`` may be a function that fetches them (only called when a reference
    must be computed); ``shared`` keys the references in ``ctx.references``
    (the timed calls' inputs, the same in every kernel of the run)."""
    from dataclasses import replace as _replace

    from .chip_numerics import ALLOWANCE, MEASURED_WITH, extra_rtol
    a = ctx.assignment
    tol = a.tolerance(dtype)
    extra, used = extra_rtol(ctx.info.chip, compiled.primitives) if ctx.info.kind == "tpu" else (0.0, ())
    what = "the float64 reference"
    if extra:
        tol = _replace(tol, rtol=tol.rtol + extra)
        what += (f" (relative tolerance {tol.rtol:.2g}: {', '.join(used)} on a TPU {ctx.info.chip} were measured "
                 f"up to {extra / ALLOWANCE:.2g} off float64, {MEASURED_WITH})")
    values = functools.cache(args) if callable(args) else lambda: args

    def reference(rounded: bool) -> np.ndarray:
        def make() -> np.ndarray:
            vals = values()
            if rounded:
                vals = [v if isinstance(v, float) else round_to(v, "bfloat16") for v in vals]
            return np.asarray(ctx.reference(*vals), np.float64)
        return make() if shared is None else ctx.references.get((*shared, rounded), make)

    out = [Expected(reference(False), tol, what)]
    # bfloat16 inputs round to themselves: the same reference, not computed twice.
    if not compiled.bf16_dots or all(i.dtype == "bfloat16" for i in compiled.kernel.inputs if i.kind == "array"):
        return out
    tol = dict(a.tolerances).get("bfloat16", a.tolerance(dtype))
    out.append(Expected(reference(True), tol,
                        "the reference of the inputs rounded to bfloat16, as a TPU rounds a float32 product's "
                        "operands at default precision"))
    return out


def check(ctx: Context, sub: str, k: Kernel, dims: dict[str, int], dtype: str) -> StageResult | None:
    """The check case on the chip; None when the chip's output is right."""
    a = ctx.assignment
    compiled = _compile(ctx, sub, k)
    if isinstance(compiled, StageResult):
        return compiled
    ctx.progress(phase="call", kernel=k.name, what="check")
    x = ctx.device.inputs(compiled, seed(ctx.secret, sub, k.name, "check"))
    out = np.asarray(ctx.device.fetch(ctx.device.run(compiled, x)), dtype=np.float64)
    ctx.progress(phase="host", kernel=k.name, what="reference")
    args = _host_args(ctx.device.fetch(x))
    red = _reduction(a, dims)
    allowed = expectations(ctx, args, dtype, compiled)
    if any(compare(out, e.reference, e.tolerance, red, a.numerics_bound).ok for e in allowed):
        return None
    ref = allowed[0].reference
    chip = compare(out, ref, allowed[0].tolerance, red, a.numerics_bound)
    interp = np.asarray(ctx.interpret(k.program, args, [i.dtype for i in k.inputs]), dtype=np.float64)
    ok_interp = compare(interp, ref, allowed[0].tolerance, red, a.numerics_bound).ok
    worst = np.unravel_index(int(np.nanargmax(np.where(np.isfinite(out), np.abs(out - ref), np.inf))), ref.shape)
    evidence = {"kernel": k.name, "index": [int(i) for i in worst], "chip": float(out[worst]),
                "interpreters": float(interp[worst]), "reference": float(ref[worst]),
                "mismatches": int(chip.mismatches), "size": int(ref.size),
                "compared with": " or ".join(e.what for e in allowed)}
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


@dataclass(frozen=True)
class Loop:
    """What the timed loop of one size left: its samples, each call's digest,
    the output of the call checked element-wise, and the trace's device times."""
    samples: timing.Samples
    digests: tuple[np.ndarray, ...]
    kept: int
    kept_output: Any
    device: DeviceTimes


def timed_loop(ctx: Context, sub: str, compiled: Compiled, size: str) -> Loop:
    """Warm-up, then the timed calls under one profiler trace."""
    dev, rule = ctx.device, ctx.rule
    for w in range(rule.warmup):
        ctx.progress(phase="call", size=size, warmup=w)
        dev.run(compiled, dev.inputs(compiled, seed(ctx.secret, sub, size, "warmup", w)))
    key = seed(ctx.secret, sub, size, "digest")
    # Chosen before the run (its output must be kept), among the run's checked calls; secret like every seed.
    pool = checked_calls(ctx, size)
    kept = pool[int(np.random.default_rng(seed(ctx.secret, sub, size, "kept")).integers(0, len(pool)))]
    digests: list[np.ndarray] = []
    output: list = []

    def call(i: int) -> float:
        ctx.progress(phase="call", size=size, calls=i)
        x = dev.inputs(compiled, timed_seed(ctx, size, i))
        t = dev.time(compiled, x)
        digests.append(dev.digest(t.output, key))       # outside the timed region, as is the fetch
        if i == kept:
            output.append(dev.fetch(t.output))
        return t.seconds
    with dev.profile(compiled) as trace:
        samples = timing.measure(call, rule)
        ctx.progress(phase="host", size=size, what="reading the profiler's trace", calls=len(samples.times))
        t0 = time.perf_counter()
    # Said apart from the checks after it: on the chip the trace was once suspected of most of a kernel's stage.
    ctx.progress(phase="host", size=size, what="trace read", seconds=round(time.perf_counter() - t0, 2))
    return Loop(samples, tuple(digests), kept, output[0] if output else None, trace.result(len(samples.times)))


def _clock(sub: str, size: str, loop: Loop) -> tuple[float, float, str, str]:
    """(median, rse, source, why not the profiler): device time from the trace,
    else the wall clock, said (never a silent change of clock)."""
    times = loop.device.times
    if times:
        return float(np.median(times)), timing.rse(times), "profiler", ""
    note = f"no device time from the profiler ({loop.device.why}); the wall clock (an upper bound) stands"
    print(f"pallas-autograder speed: {sub} at {size}: {note}", file=sys.stderr)
    return loop.samples.median, loop.samples.rse, "wall", note


def check_calls(ctx: Context, sub: str, compiled: Compiled, size: str, dims: dict, dtype: str,
                loop: Loop) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(calls checked, calls whose outputs miss their own inputs' reference):
    the kept call element by element, the run's other checked calls through their digests."""
    dev, a = ctx.device, ctx.assignment
    key, red, nb = seed(ctx.secret, sub, size, "digest"), _reduction(a, dims), a.numerics_bound
    picks = [i for i in checked_calls(ctx, size) if i != loop.kept and i < len(loop.digests)]
    bad = []
    for i in [loop.kept, *sorted(picks)]:
        ctx.progress(phase="host", size=size, what=f"checking timed call {i}")
        def args(i: int = i) -> list:
            return _host_args(dev.fetch(dev.inputs(compiled, timed_seed(ctx, size, i))))
        allowed = expectations(ctx, args, dtype, compiled, shared=(size, i))
        if i == loop.kept:
            ok = any(close(loop.kept_output, e, red, nb) for e in allowed)
        else:
            ok = any(digest_ok(loop.digests[i], e, key, red, nb) for e in allowed)
        if not ok:
            bad.append(i)
    return (loop.kept, *sorted(picks)), tuple(bad)


def time_size(ctx: Context, sub: str, compiled: Compiled, size: str, dims: dict, dtype: str) -> SizeTime:
    loop = timed_loop(ctx, sub, compiled, size)
    median, spread, source, note = _clock(sub, size, loop)
    checked, bad = check_calls(ctx, sub, compiled, size, dims, dtype, loop)
    floor = _floor(compiled.kernel, ctx.info, ctx.flops.get(size, 0.0))
    s = loop.samples
    return SizeTime(size, median, spread, len(s.times), s.stopped, source, compiled.compile_s, floor,
                    checked, bad, s.median, note)


def _floor(k: Kernel, info: DeviceInfo, flops: float) -> float:
    """The roofline floor: every input read once and the output written once at
    full bandwidth, or the work at the chip's peak, whichever is longer (0.0
    where the device's figures are unknown: no floor, no gate)."""
    if info.hbm_bytes_per_s <= 0 or info.bf16_flops_per_s <= 0:
        return 0.0
    nbytes = sum(int(np.prod(s.shape)) * numpy_dtype(s.dtype).itemsize for s in k.inputs if s.kind == "array")
    nbytes += int(np.prod(k.output_shape)) * numpy_dtype(k.output_dtype).itemsize
    return roofline_floor(nbytes, flops, info.hbm_bytes_per_s, info.bf16_flops_per_s)


def _against_solution(s: SizeTime, base: SizeTime) -> str | None:
    """The solution gates, comparing like with like (the same clock)."""
    if base.source != s.source:
        return (f"clock: at {s.size}, timed on the {s.source} clock ({s.clock_note or 'device time'}) but the "
                f"solution on the {base.source} clock; the two are not compared")
    if s.median_s > SLOWER_THAN_SOLUTION * base.median_s:
        return (f"slow: at {s.size}, {s.median_s / base.median_s:.1f}x the solution's time "
                f"(more than {SLOWER_THAN_SOLUTION:g}x)")
    return None


def holds(sizes: tuple[SizeTime, ...], solution: dict[str, SizeTime],
          rule: timing.Rule = timing.DEFAULT) -> tuple[str, ...]:
    """The anomaly gates a timed result trips (each holds it for review)."""
    out = []
    for s in sizes:
        if s.mismatched:
            out.append(f"output-check: at {s.size}, timed calls {list(s.mismatched)} returned outputs that do "
                       "not match their own inputs' reference (a replayed or cached result, or wrong at this size)")
        if s.floor_s > 0 and s.median_s < s.floor_s:
            out.append(f"faster-than-roofline: at {s.size}, {s.median_s * 1e3:.4f} ms is below the chip's floor "
                       f"of {s.floor_s * 1e3:.4f} ms")
        found = _against_solution(s, solution[s.size]) if s.size in solution else None
        if found:
            out.append(found)
        if rule.noisy(s.stopped, s.rse):
            out.append(f"noisy: at {s.size}, the relative standard error is {s.rse:.1%} after {s.calls} calls "
                       "(the cap)")
    return tuple(out)


def _compile(ctx: Context, sub: str, k: Kernel) -> Compiled | StageResult:
    ctx.progress(phase="compile", kernel=k.name)
    try:
        return ctx.device.compile(k)
    except ChipReject as e:
        return StageResult(sub, "chip-reject", str(e)[:3000], evidence={"kernel": k.name})
    except CompileFailed as e:
        return StageResult(sub, "error", f"compiling {k.name} failed, and not because the TPU compiler refused "
                           f"the kernel: {e}"[:3000], evidence={"kernel": k.name})


@dataclass(frozen=True)
class Size:
    """A size the stage times: named as the spec's speed size, timed on the kept
    program ``program`` (its own; a CPU rehearsal may time a smaller one instead)."""
    name: str
    dims: dict
    dtype: str
    program: str


def speed_sizes(a: Assignment) -> tuple[Size, ...]:
    return tuple(Size(s.name, dict(s.dims), s.dtype, s.name) for s in a.speed.sizes)


def run(ctx: Context, sub: str, programs: dict[str, bytes], sizes: tuple[Size, ...] | None = None) -> StageResult:
    """The whole stage for one kernel (``programs``: size name or ``check:<case>`` -> program),
    timed at ``sizes`` (default: the spec's speed sizes)."""
    a = ctx.assignment
    check_name = next((n for n in programs if n.startswith("check:")), None)
    if check_name is not None:
        case = a.case(check_name.split(":", 1)[1])
        failed = check(ctx, sub, kernel(a, check_name, programs[check_name], case.dim_map, case.dtype),
                       case.dim_map, case.dtype)
        if failed is not None:
            return failed
    timed = []
    for size in sizes or speed_sizes(a):
        if size.program not in programs:
            return StageResult(sub, "error", f"no traced program at the size {size.program!r}")
        compiled = _compile(ctx, sub, kernel(a, size.name, programs[size.program], size.dims, size.dtype))
        if isinstance(compiled, StageResult):
            return compiled
        timed.append(time_size(ctx, sub, compiled, size.name, size.dims, size.dtype))
    found = holds(tuple(timed), ctx.solution, ctx.rule)
    return StageResult(sub, "held" if found else "timed", "", tuple(timed), found)
