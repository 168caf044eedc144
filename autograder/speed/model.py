"""A TPU time estimate from a kernel's schedule (pure model; no JAX).

It predicts device time: what a TPU's profiler reports for one call of the
kernel, the time the TPU stage ranks on. The facts come from
``pallas_surface.cost``: the grid, the bytes each operand's blocks move, and
the grid steps grouped into classes that do the same work (``pl.when``
conditions and loop bounds evaluated at every step) and move the same bytes,
with the chip's figures from JAX's TPU table. The model follows how the Pallas
TPU pipeline runs a grid: the first input blocks are fetched before step 0;
then each step costs the larger of its compute (the matrix unit at its
operands' rate, the vector unit, the EUP, part of the last two hidden under the
first; inside loop bodies a slower rate for the work that updates what the loop
carries and a wait per iteration for each dot's or lane reduction's result) and
its traffic (the next step's fetches, the last step's write-backs and the
kernel's own DMAs overlap the compute; a single-buffered block's copy and the
latency of a DMA waited with nothing else in flight do not), plus the pipeline's own cost (per step,
and per manual DMA issued and waited), which a step longer than it hides in
part, plus the wait for the step's longest chain of dependent dots and lane
reductions; the last output blocks are written back at the end; on a megacore
chip (v4, v5p) 'parallel' grid axes split the steps over its two TensorCores;
an input aliased to an output that the caller still holds is copied first; a
call has a small fixed device cost. Never below the roofline floor, each
matrix-unit rate class at its own peak. A call whose blocks and scratch exceed
the chip's scoped VMEM has no estimate: the compiler would refuse it.

Constants (``Fitted``) were fitted to a real TPU v5e's device times of
microbenchmarks and half of issue 47's style kernels (``benchmarks/chip/points.py``,
role "fit"; chip calls of 2026-12-06 and 12-07, jax 0.10.2, libtpu 0.0.42.1);
docs/speed-validation.md has every point, the held-out, blind and styles points apart (``benchmarks/speed_validation.py
--fit`` redoes the fit). They are in cycles at each chip's clock or in shares
of its table's figures, so other chips scale by them: not validated.

- CLOCK_HZ (cycles to seconds, and the vector rates): the bf16 peak / (2 x
  matrix units x columns^2), as a systolic array does one multiply-add per cell
  per cycle, from JAX's table: v4 1.05 GHz (also measured: 1050 MHz,
  ayaka14732/pallas-tpu-tutorial ch. 1), v5e 1.50 GHz, v5p 1.75 GHz. v6e:
  Google's v6e page has said both 2 and 4 256x256 matrix units per TensorCore
  (JAX's table: 2); 2 would mean 3.5 GHz, above every TPU clock published, so
  4 is taken: 1.75 GHz.
- Matrix-unit rate classes (``pallas_surface.stepwork``): f32 operands at
  DEFAULT precision are rounded to bf16 (one pass at the bf16 peak; measured on
  the v5e: the error of an f32 product in a kernel is that of bf16-rounded
  operands); HIGH and HIGHEST take 3 and 6 bf16 passes (jax.lax.Precision);
  int8, fp8 and int4 run at the chip's own peak where JAX's table has one, else
  at the bf16 peak (converted; no chip point).
- SCOPED_VMEM: 16 MiB on a v5e (measured: "limit 16.00M"); other chips' limits
  were not measured, and no refusal is predicted for them.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

from ..pallas_surface.static.facts import Chip, CostCall, CostOperand, Schedule

CLOCK_HZ = {"v4": 1.05e9, "v5e": 1.50e9, "v5p": 1.75e9, "v6e": 1.75e9}
PASSES = {"bf16": 1, "f32": 1, "bf16x3": 3, "bf16x6": 6}
CHIPS = ("v4", "v5e", "v5p", "v6e")      # names JAX's TPU table knows (pltpu ChipVersion)

Bound = Literal["compute", "memory", "per-step overhead"]


@dataclass(frozen=True)
class Fitted:
    """The constants fitted to a real TPU v5e's device times (benchmarks/chip/points.py, role "fit":
    microbenchmarks and half of issue 47's styles, chip calls A, C and K; docs/speed-validation.md).
    Cycles are at each chip's clock (CLOCK_HZ), so other chips scale by their clock and their
    table's figures (not validated on them)."""
    hbm_efficiency: float = 0.82          # share of the table's HBM bandwidth a pipeline reaches (~670 GB/s)
    step_cycles: float = 285.0            # the pipeline's own cost a grid step (~0.19 us), hidden by long transfers
    dma_cycles: float = 167.9             # issuing and waiting one manual DMA (emit_pipeline's inner steps too)
    # One result latency for a step's chain links (dots and lane reductions) and a loop iteration's
    # dot. Fitted as three constants (a chain's dot link, its reduction link, a loop's dot), the fit
    # went degenerate: the reduction link to ~2 cycles and the dot link to 166, as the fit points
    # cannot tell a chain's dots from its reductions (attention-like chains hold both), which
    # overcharged every 128-block matmul (one dot link a step) by 11-16%. One figure does not.
    dot_wait_cycles: float = 111.6        # waiting for a dot's (or a chain's lane reduction's) result
    reduce_wait_cycles: float = 92.9      # waiting for a lane reduction's result inside a loop iteration
    valu_per_cycle: float = 3.341         # vector element operations per lane slot per cycle, straight-line code
    loop_valu_per_cycle: float = 0.9095   # ... updating what a loop carries (iterations do not overlap)
    eup_per_cycle: float = 1.409          # EUP operations (exp, log, tanh, reciprocal) per lane slot per cycle
    mxu_overlap: float = 0.974            # the share of the vector and EUP work (fresh values) the matrix unit's hides
    dma_latency_cycles: float = 595.0     # a manual DMA waited with no other copy in flight: its latency (~0.4 us)
    sync_cycles: float = 299.6            # a single-buffered block's copy (pl.Buffered(1)): its latency (~0.2 us)
    call_s: float = 0.112e-6              # a pallas_call's fixed device cost
    # A jax.debug.print outside the kernels: a host callback the device waits for. Fitted to add's
    # debug_prints on a v5e (5.09 ms in chip call A, 5.71 ms in call F, against 3.41 ms for the same
    # kernel without it; pl.debug_print inside a kernel cost nothing measurable: fit2/print-copy).
    host_print_s: float = 1.7e-3


FITTED = Fitted()
# The scoped-VMEM limit a kernel compiles under unless its CompilerParams raise it: measured on a
# real v5e (jax 0.10.2, libtpu 0.0.42.1: "limit 16.00M", CompileTimeScopedVmemOom). Other chips'
# defaults were not measured: no refusal is predicted for them.
SCOPED_VMEM = {"v5e": 16 * 1024 * 1024}


class NoEstimate(ValueError):
    """The model cannot put a time on this schedule (the message says why)."""


@dataclass(frozen=True)
class Estimate:
    seconds: float
    bound: Bound
    hbm_bytes: int
    min_hbm_bytes: int
    flops: float
    grid_steps: int
    chip: str
    percent_of_peak: float
    floor_seconds: float
    advice: str
    compute_seconds: float
    memory_seconds: float
    overhead_seconds: float
    percent_of_bandwidth: float = 0.0     # HBM bytes moved / time, against the chip's bandwidth
    flops_by_rate: dict[str, float] = field(default_factory=dict)   # matrix-unit flops by rate class
    data_dependent: bool = False          # the schedule read scalar-prefetch data (the inputs drawn)
    host_print_seconds: float = 0.0       # jax.debug.print outside the kernels (Fitted.host_print_s each)
    pipeline_steps: int = 0               # steps of pipelines inside the grid steps (emit_pipeline's), all told
    pipeline_steps_each: int = 0          # ... of each grid step, when every grid step takes as many (else 0)

    def to_json(self) -> dict:
        return {"status": "estimated", **asdict(self)}


def clock_hz(chip: Chip) -> float:
    derived = chip.bf16_flops_per_s / (2.0 * chip.mxus * chip.mxu_columns ** 2)
    return CLOCK_HZ.get(chip.chip, derived)


def step_seconds(chip: Chip, fitted: Fitted = FITTED) -> float:
    return fitted.step_cycles / clock_hz(chip)


def hbm_rate(chip: Chip, fitted: Fitted = FITTED) -> float:
    """Bytes per second a pipeline moves between HBM and VMEM."""
    return chip.hbm_bytes_per_s * fitted.hbm_efficiency


def mxu_rate(chip: Chip, rate_class: str) -> float:
    """Matrix-unit flops per second of one TensorCore for one rate class."""
    if rate_class in PASSES:
        return chip.bf16_flops_per_s / PASSES[rate_class]
    native = {"int8": chip.int8_ops_per_s, "fp8": chip.fp8_ops_per_s, "int4": chip.int4_ops_per_s}
    return float(native.get(rate_class, 0) or chip.bf16_flops_per_s)


def vector_rate(chip: Chip, fitted: Fitted = FITTED, in_loop: bool = False) -> float:
    per = fitted.loop_valu_per_cycle if in_loop else fitted.valu_per_cycle
    return chip.lanes * chip.sublanes * per * clock_hz(chip)


def eup_rate(chip: Chip, fitted: Fitted = FITTED) -> float:
    return chip.lanes * chip.sublanes * fitted.eup_per_cycle * clock_hz(chip)


def chip_cores(chip: Chip) -> int:
    """TensorCores one kernel can use: both of a megacore chip's, else one."""
    return chip.tensor_cores if chip.megacore else 1


@dataclass(frozen=True)
class _Part:
    """One pallas_call's share of the estimate."""
    seconds: float
    limited: dict[str, float]        # time in steps limited by each bound
    units: dict[str, float]          # compute time by unit (mxu:<class>, vector, transcendental)
    memory: float
    overhead: float
    moved: int
    copy: float                      # seconds of the aliased-input copy
    minimum: int
    flops: dict[str, float]
    steps: int
    operands: tuple[CostOperand, ...]
    vector_per_step: float
    pipeline_steps: float = 0.0      # inner pipelines' steps, over every grid step
    inner: tuple[str, ...] = ()      # the blocks those pipelines copy, for people ("input 0 (8, 128)")
    dma_starts: float = 0.0          # manual DMAs started, over every grid step


def _cores(call: CostCall, chip: Chip) -> int:
    """Megacore splits the grid's 'parallel' axes over both TensorCores (JAX's Pallas TPU
    pipelining guide, "TPUs in Megacore configuration"); other chips run one."""
    split = any("parallel" in s and g >= 2 for s, g in zip(call.dimension_semantics, call.grid))
    return chip_cores(chip) if split else 1


def _units(c, chip: Chip, fitted: Fitted) -> dict[str, float]:
    """Seconds of one step's compute, by unit."""
    cycle = 1.0 / clock_hz(chip)
    units = {f"mxu:{k}": f / mxu_rate(chip, k) for k, f in c.mxu_flops.items()}
    straight = max(c.vector - c.loop_vector, 0.0)
    units["vector"] = straight / vector_rate(chip, fitted) + c.loop_vector / vector_rate(chip, fitted, True)
    units["transcendental"] = c.transcendental / eup_rate(chip, fitted)
    # A loop iteration with a dot or a lane reduction waits for its result before the next one starts.
    units["dot wait"] = c.loop_dots * fitted.dot_wait_cycles * cycle
    units["reduction wait"] = c.loop_reductions * fitted.reduce_wait_cycles * cycle
    return units


def _step_time(c, chip: Chip, fitted: Fitted) -> tuple[float, Bound, dict[str, float], float]:
    """One step: the larger of its compute and its traffic (they overlap), then the pipeline's
    own cost (the step's bookkeeping and each manual DMA's issue and wait), hidden in part when
    the step is longer than it, and the wait for the step's last dot."""
    units = _units(c, chip, fitted)
    mxu = sum(v for k, v in units.items() if k.startswith("mxu:"))
    # The matrix unit, the vector unit and the EUP work at once (bundles issue to each): part of the
    # smaller of the two is hidden under the larger; not what updates a loop's carries, which waits
    # for the dot it adds in.
    free = max(c.vector - c.loop_vector, 0.0) / vector_rate(chip, fitted) + units["transcendental"]
    compute = sum(units.values()) - fitted.mxu_overlap * min(mxu, free)
    bw = hbm_rate(chip, fitted)
    memory = (c.block_bytes - c.sync_bytes + c.dma_bytes) / bw
    cycle = 1.0 / clock_hz(chip)
    own = (fitted.step_cycles + c.dma_starts * fitted.dma_cycles) * cycle
    # What nothing overlaps: a single-buffered block's copy waits for the step that uses its buffer,
    # and a DMA waited with no other in flight shows its latency.
    latency = c.sync_moves * fitted.sync_cycles + c.dma_exposed * fitted.dma_latency_cycles
    exposed = c.sync_bytes / bw + latency * cycle
    busy = max(compute, memory) + exposed
    overhead = own * min(1.0, own / busy) if busy > 0 else own
    # The step ends once its longest chain of dependent dots and lane reductions has its results.
    overhead += c.chain * fitted.dot_wait_cycles * cycle
    bound: Bound = "per-step overhead" if overhead > busy else "compute" if compute >= memory + exposed else "memory"
    return busy + overhead, bound, units, memory + exposed


def _call(call: CostCall, chip: Chip, fitted: Fitted) -> _Part:
    bw = hbm_rate(chip, fitted)
    limited = {"compute": 0.0, "memory": 0.0, "per-step overhead": 0.0}
    units: dict[str, float] = {}
    flops: dict[str, float] = {}
    busy = memory = vector = overhead = 0.0
    for c in call.step_classes:
        t, bound, parts, mem = _step_time(c, chip, fitted)
        busy += t * c.steps
        limited[bound] += t * c.steps
        memory += mem * c.steps
        overhead += max(t - max(sum(parts.values()), mem), 0.0) * c.steps
        vector += c.vector * c.steps
        for k, v in parts.items():
            units[k] = units.get(k, 0.0) + v * c.steps
        for k, f in c.mxu_flops.items():
            flops[k] = flops.get(k, 0.0) + f * c.steps
    cores = _cores(call, chip)
    pipelined = [op for op in call.operands if op.pipelined]
    edges = sum(op.block_bytes for op in pipelined) / bw     # first fetches, last write-backs
    copy = call.copy_bytes / (bw * chip_cores(chip))
    limited = {k: v / cores for k, v in limited.items()}
    limited["memory"] += edges + copy
    moved = int(sum(op.moves * op.block_bytes for op in pipelined)
                + sum(c.dma_bytes * c.steps for c in call.step_classes) + call.copy_bytes)
    steps = max(call.steps, 1)
    return _Part(busy / cores + edges + copy + fitted.call_s, limited, {k: v / cores for k, v in units.items()},
                 memory / cores + edges + copy, overhead / cores, moved, copy,
                 sum(op.array_bytes for op in call.operands), flops, call.steps, call.operands, vector / steps,
                 sum(c.pipeline_steps * c.steps for c in call.step_classes), _inner_blocks(call),
                 sum(c.dma_starts * c.steps for c in call.step_classes))


def _inner_blocks(call: CostCall) -> tuple[str, ...]:
    """An inner pipeline's blocks for people: the operand each copies (by the call's own name for
    it; an index the facts claim outside the call's operands names none) and the block's shape."""
    out: list[str] = []
    for b in call.inner_blocks:
        shape = str(tuple(b.block))
        named = f"{call.operands[b.operand].operand} {shape}" if 0 <= b.operand < len(call.operands) else shape
        if b.block and named not in out:
            out.append(named)
    return tuple(out)


def vmem_refusal(call: CostCall, chip: Chip) -> str:
    """Why the TPU compiler would refuse this call's VMEM at this size ("" when it would not, or the
    chip's limit was never measured)."""
    limit = call.vmem_limit or SCOPED_VMEM.get(chip.chip, 0)
    if not limit or call.vmem_bytes <= limit:
        return ""
    return (f"the TPU compiler would refuse it at this size: its blocks and scratch need "
            f"{call.vmem_bytes / 2 ** 20:.1f} MiB of VMEM, over the {limit / 2 ** 20:.0f} MiB scoped limit "
            f"(a real v5e refused such kernels with CompileTimeScopedVmemOom)")


def roofline_floor(nbytes: float, flops: float, hbm_bytes_per_s: float, flops_per_s: float) -> float:
    """No kernel beats moving ``nbytes`` at full bandwidth or doing ``flops`` at the chip's peak."""
    return max(nbytes / hbm_bytes_per_s, flops / flops_per_s)


def floor_seconds(chip: Chip, nbytes: float, flops: dict[str, float]) -> float:
    """The roofline floor with each rate class at its own peak, on every TensorCore a kernel can use."""
    cores = chip_cores(chip)
    compute = sum(f / (mxu_rate(chip, k) * cores) for k, f in flops.items())
    return roofline_floor(nbytes, compute, chip.hbm_bytes_per_s * cores, 1.0)


def _sum(dicts) -> dict[str, float]:
    out: dict[str, float] = {}
    for d in dicts:
        for k, v in d.items():
            out[k] = out.get(k, 0.0) + v
    return out


def estimate(schedule: Schedule, fitted: Fitted = FITTED) -> Estimate:
    """The estimate, or ``NoEstimate`` with the reason (never a guess)."""
    problems = [c.problem for c in schedule.calls if c.problem]
    if problems:
        raise NoEstimate(problems[0])
    if not schedule.calls:
        raise NoEstimate("no pallas_call: nothing runs on the TPU to estimate")
    chip = schedule.chip
    refused = [r for r in (vmem_refusal(c, chip) for c in schedule.calls) if r]
    if refused:
        raise NoEstimate(refused[0])
    parts = [_call(c, chip, fitted) for c in schedule.calls]
    moved = sum(p.moved for p in parts)
    minimum = sum(p.minimum for p in parts)
    flops = _sum(p.flops for p in parts)
    steps = sum(p.steps for p in parts)
    # A kernel that skips blocks never reads all of an input: its own traffic bounds it then.
    floor = floor_seconds(chip, min(minimum, moved), flops)
    prints = schedule.host_prints * fitted.host_print_s
    seconds = max(sum(p.seconds for p in parts), floor) + prints
    limited = _sum(p.limited for p in parts)
    bound: Bound = max(("compute", "memory", "per-step overhead"), key=lambda b: limited[b])
    units = _sum(p.units for p in parts)
    peak = chip.bf16_flops_per_s * chip_cores(chip)
    total = sum(flops.values())
    pct = 100.0 * total / seconds / peak if seconds else 0.0
    bw_pct = 100.0 * moved / seconds / (chip.hbm_bytes_per_s * chip_cores(chip)) if seconds else 0.0
    return Estimate(seconds, bound, moved, minimum, total, steps, chip.chip, pct, floor,
                    _advice(parts, bound, chip, units, fitted, _each(schedule)), sum(units.values()),
                    sum(p.memory for p in parts),
                    sum(p.overhead for p in parts), bw_pct, flops,
                    any(c.data_dependent for c in schedule.calls), prints,
                    round(sum(p.pipeline_steps for p in parts)), _each(schedule))


def _each(schedule: Schedule) -> int:
    """The pipeline steps every grid step takes, when all take as many (0: they differ, or none)."""
    counts = {c.pipeline_steps for call in schedule.calls for c in call.step_classes if c.steps}
    return round(counts.pop()) if len(counts) == 1 else 0


def step_words(grid_steps: int, pipeline_steps: int, each: int) -> str:
    """How many steps run: "2 grid steps", "2 grid steps x 64 pipeline steps" (an inner pipeline's
    steps in each grid step), or "2 grid steps and 130 pipeline steps in all" when they differ."""
    grid = f"{grid_steps:,} grid step{'s' if grid_steps != 1 else ''}"
    if not pipeline_steps:
        return grid
    if each:
        return f"{grid} x {each:,} pipeline step{'s' if each != 1 else ''}"
    return f"{grid} and {pipeline_steps:,} pipeline steps in all"


def _advice(parts: list[_Part], bound: Bound, chip: Chip, units: dict[str, float], fitted: Fitted,
            each: int = 0) -> str:
    """The one change that would help most, for the bound the estimate found."""
    steps = sum(p.steps for p in parts)
    if bound == "per-step overhead":
        return _overhead_advice(parts, chip, fitted, each)
    if bound == "memory":
        return _memory_advice(parts)
    return _compute_advice(parts, units, steps)


def _overhead_advice(parts: list[_Part], chip: Chip, fitted: Fitted, each: int) -> str:
    """Per-step overhead: the blocks that make the steps (the grid's, an inner pipeline's), how many
    steps they give and what each costs; never a list of no blocks."""
    steps = sum(p.steps for p in parts)
    inner_steps = round(sum(p.pipeline_steps for p in parts))
    words = step_words(steps, inner_steps, each)
    blocks = ", ".join(f"{op.operand} {tuple(op.block)}" for p in parts for op in p.operands if op.pipelined)
    inner = ", ".join(b for p in parts for b in p.inner)
    per_step = step_seconds(chip, fitted) * 1e6
    if inner_steps and inner:
        # Each pipeline step's cost is its DMAs' (issued and waited; Fitted.dma_cycles).
        per_inner = sum(p.dma_starts for p in parts) / inner_steps * fitted.dma_cycles / clock_hz(chip) * 1e6
        if blocks:
            return (f"blocks of {blocks} (the grid's) and {inner} (the kernel's inner pipeline's) give {words}; "
                    f"the per-step overhead (about {per_step:.2f} us a grid step and {per_inner:.2f} us a pipeline "
                    f"step on a {chip.chip}) is most of the time: use larger blocks")
        return (f"blocks of {inner} in the kernel's inner pipeline give {words}; the per-step overhead (about "
                f"{per_inner:.2f} us a pipeline step on a {chip.chip}: its DMAs, issued and waited) is most of the "
                "time: use larger blocks in the inner pipeline")
    if not blocks:
        # No block is pipelined: the cost is the kernel's own copies (issued and waited in its steps).
        return (f"the pipeline's own cost is most of the time: in its {words} the kernel issues and waits on "
                "its own DMAs, each at a fixed cost: copy fewer, larger chunks")
    return (f"blocks of {blocks} give {words}; the per-step overhead (about {per_step:.2f} us a grid step on a "
            f"{chip.chip}) is most of the time: use larger blocks")


def _memory_advice(parts: list[_Part]) -> str:
    moved, minimum = sum(p.moved for p in parts), sum(p.minimum for p in parts)
    copy = sum(p.copy for p in parts)
    if copy > 0.5 * sum(p.memory for p in parts):
        return ("memory-bound, mostly copying an input aliased to the output (input_output_aliases) that the "
                "caller still holds: XLA copies it before the kernel runs; donate it (jax.jit donate_argnums) "
                "or create it inside the jitted function, and that traffic goes")
    pipelined = [op for p in parts for op in p.operands if op.pipelined]
    if minimum and moved > 1.5 * minimum and pipelined:
        worst = max(pipelined, key=lambda op: op.moves * op.block_bytes / max(op.array_bytes, 1))
        times = worst.moves * worst.block_bytes / max(worst.array_bytes, 1)
        return (f"memory-bound: {worst.operand} is moved {times:.1f} times its size (its block index changes "
                f"{worst.moves:,} times over the grid): larger blocks along the axes it does not depend on, or "
                "a grid order that keeps its block in place between steps, cut that traffic")
    # (Not "use bfloat16": the handout fixes the inputs' dtypes; a cast inside costs the traffic it saves.)
    return ("memory-bound at close to the minimum traffic: each byte of the inputs and output is already moved "
            "about once, so this is near the fastest these arrays allow")


_PRECISION = {"bf16x6": ("HIGHEST", 6), "bf16x3": ("HIGH", 3)}


def _compute_advice(parts: list[_Part], units: dict[str, float], steps: int) -> str:
    unit = max(units, key=units.get) if units else "mxu:bf16"
    if unit in ("mxu:bf16x6", "mxu:bf16x3"):
        name, passes = _PRECISION[unit[4:]]
        return (f"compute-bound, mostly float32 matmuls at {name} precision ({passes} bf16 passes each): "
                "bfloat16 inputs with float32 accumulation (a float32 preferred_element_type) take one pass; "
                f"keep {name} only where the accuracy needs it")
    if unit == "mxu:f32":
        return ("compute-bound at the matrix unit, on float32 operands that Mosaic rounds to bfloat16 (one pass "
                "at DEFAULT precision): bfloat16 inputs with float32 accumulation take the same matrix-unit "
                "time with half the operand traffic and VMEM, and no rounding on the vector unit each step")
    if unit == "vector":
        per_step = sum(p.vector_per_step * p.steps for p in parts) / max(steps, 1)
        return (f"compute-bound on the vector unit (about {per_step:,.0f} element operations a step, more time "
                "than the matrix unit's): keep element-wise work out of the inner loop (scale once at the end, "
                "not every step; fewer masks and casts per block)")
    if unit == "transcendental":
        return ("compute-bound on the EUP (exp, log, reciprocal, divide): fewer of them per element, e.g. one "
                "reciprocal multiplied in rather than a divide per element, one exp per score")
    if unit in ("dot wait", "reduction wait"):
        what = "matrix product" if unit == "dot wait" else "reduction"
        return (f"compute-bound by waits inside a loop of the kernel: each iteration waits for its {what}'s result "
                "before the next one starts, so the units stand idle between them: fewer, larger iterations "
                "(one product over the whole block rather than a loop of small ones)")
    return (f"compute-bound at the matrix unit ({unit[4:]}): the limit a matmul should have; only less work "
            "helps (skip blocks that do not contribute with pl.when)")


def _ms(s: float) -> str:
    return f"{s * 1e3:.3f} ms" if s < 1 else f"{s:.2f} s"


def _steps_line(e: Estimate) -> str:
    """The grid steps, and the steps of the pipelines inside them (pltpu.emit_pipeline's, or a loop of the
    kernel's own DMAs), which cost as steps do."""
    if not e.pipeline_steps:
        return f"{e.grid_steps:,}"
    if e.pipeline_steps_each:
        return (f"{e.grid_steps:,}, each running {e.pipeline_steps_each:,} steps of an inner pipeline "
                f"({e.pipeline_steps:,} in all)")
    return f"{e.grid_steps:,}, running {e.pipeline_steps:,} steps of inner pipelines in all"


def text(e: Estimate) -> str:
    """The estimate for people (the CLI's and the feedback's wording)."""
    rates = ""
    if set(e.flops_by_rate) - {"bf16"}:
        rates = " (" + ", ".join(f"{k} {v / 1e9:,.2f}" for k, v in sorted(e.flops_by_rate.items())) + ")"
    lines = [
        f"Estimated time on a TPU {e.chip}: {_ms(e.seconds)} ({e.bound}-bound; {e.percent_of_peak:.1f}% of the "
        f"chip's bf16 matrix peak, {e.percent_of_bandwidth:.1f}% of its HBM bandwidth). An estimate from the "
        "kernel's schedule, not a measurement.",
        f"HBM traffic: {e.hbm_bytes / 1e6:,.1f} MB moved; the minimum (each input read once, each output "
        f"written once) is {e.min_hbm_bytes / 1e6:,.1f} MB.",
        f"Grid steps: {_steps_line(e)}; matrix-unit work {e.flops / 1e9:,.2f} GFLOP{rates}; roofline floor "
        f"{_ms(e.floor_seconds)}.",
        f"Where the time goes: compute {_ms(e.compute_seconds)}, memory {_ms(e.memory_seconds)}, per-step "
        f"overhead {_ms(e.overhead_seconds)}"
        + (f", jax.debug.print outside the kernel {_ms(e.host_print_seconds)} (the device waits for the host)"
           if e.host_print_seconds else "") + ".",
        f"What would help most: {e.advice}."]
    if e.data_dependent:
        lines.append("This schedule depends on the kernel's scalar-prefetch data (the inputs drawn for this "
                     "size): other data can give another time.")
    return "\n".join(lines)
