"""A TPU time estimate from a kernel's schedule (pure model; no JAX).

The facts come from ``pallas_surface.cost`` (grid, the bytes each operand's
blocks move, per-step work, the chip's figures from JAX's TPU table). The model
follows how the Pallas TPU pipeline runs a grid: the first input blocks are
fetched before step 0; then each step costs the largest of its matrix and
vector work, its block traffic (the next step's fetches and this step's
write-backs overlap the compute), and a fixed per-step cost of the pipeline
itself; the last output blocks are written back at the end; a call costs a
fixed launch on top. Never below the roofline floor: max(minimum traffic /
bandwidth, flops / peak).

Constants and where they come from (validated in tests/test_speed.py against
the published timings they were fitted to):

- STEP_S = 0.35 us: the Pallas TPU matmul guide (docs.jax.dev, pallas/tpu/matmul,
  "Matrix multiplication performance") times bm = bk = bn = 128 bf16 matmuls on
  a TPU v5e at 11.77 ms for 4096^3 (32,768 grid steps) and 91.8 ms for 8192^3
  (262,144 steps), each step's own DMA and MXU work being under 0.1 us: about
  0.35 us a step is the pipeline's own cost.
- LAUNCH_S = 0.1 ms: the same guide's timing loop gives XLA's own 1024^3 bf16
  matmul 0.119 ms where its compute is 0.011 ms: the per-call cost of that
  measurement (dispatch and synchronisation).
- Vector units: VECTOR_SHARE of the chip's bf16 matrix peak as element
  operations per second, and a quarter of that for transcendentals. These are
  assumptions (no published Pallas timing isolates them); they matter only for
  kernels whose steps are dominated by element-wise work.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

from ..pallas_surface.facts import Chip, CostCall, CostOperand, Schedule

STEP_S = 0.35e-6
LAUNCH_S = 0.1e-3
VECTOR_SHARE = 1 / 32
TRANSCENDENTAL_SHARE = 1 / 128
CHIPS = ("v4", "v5e", "v5p", "v6e")      # names JAX's TPU table knows (pltpu ChipVersion)

Bound = Literal["compute", "memory", "per-step overhead"]


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

    def to_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class _Part:
    """One pallas_call's share of the estimate."""
    seconds: float
    steps: int
    moved: int
    minimum: int
    flops: float
    compute: float
    memory: float
    overhead: float
    operands: tuple[CostOperand, ...]


def _call(call: CostCall, chip: Chip) -> _Part:
    bw, peak = chip.hbm_bytes_per_s, chip.bf16_flops_per_s
    vector_rate = peak * VECTOR_SHARE
    steps = max(call.steps, 1)
    work = call.per_step
    step_compute = (work.flops / peak + work.vector / vector_rate
                    + work.transcendental / (peak * TRANSCENDENTAL_SHARE))
    moved = int(work.dma_bytes * steps)
    first = last = 0
    minimum = 0
    for op in call.operands:
        minimum += op.array_bytes
        if not op.pipelined:
            continue
        moved += op.moves * op.block_bytes
        if op.is_output:
            last += op.block_bytes
        else:
            first += op.block_bytes
    step_memory = moved / bw / steps
    per_step = max(STEP_S, step_compute, step_memory)
    seconds = (first + last) / bw + steps * per_step
    return _Part(seconds, steps, moved, minimum, work.flops * steps, steps * step_compute, moved / bw,
                 steps * STEP_S, call.operands)


def _advice(parts: list[_Part], bound: Bound, moved: int, minimum: int, steps: int) -> str:
    if bound == "per-step overhead":
        blocks = ", ".join(f"{op.operand} {tuple(op.block)}" for p in parts for op in p.operands
                           if op.pipelined)
        return (f"blocks of {blocks} give {steps:,} grid steps; the per-step overhead (about "
                f"{STEP_S * 1e6:.2f} us a step) is most of the time: use larger blocks")
    if bound == "memory" and minimum and moved > 1.5 * minimum:
        worst = max((op for p in parts for op in p.operands if op.pipelined),
                    key=lambda op: op.moves * op.block_bytes / max(op.array_bytes, 1))
        times = worst.moves * worst.block_bytes / max(worst.array_bytes, 1)
        return (f"{worst.operand} is moved {times:.1f} times its size (its block index changes "
                f"{worst.moves:,} times over the grid): larger blocks along the axes it does not "
                "depend on, or a grid order that keeps its block in place between steps, cut that traffic")
    if bound == "memory":
        return "memory-bound at close to the minimum traffic: each byte is already moved about once"
    return "compute-bound: the matrix unit is the limit; keep the work in large dot_general calls"


def roofline_floor(nbytes: float, flops: float, hbm_bytes_per_s: float, flops_per_s: float) -> float:
    """No kernel beats moving ``nbytes`` at full bandwidth or doing ``flops`` at the chip's peak."""
    return max(nbytes / hbm_bytes_per_s, flops / flops_per_s)


def estimate(schedule: Schedule) -> Estimate:
    chip = schedule.chip
    parts = [_call(c, chip) for c in schedule.calls]
    moved = sum(p.moved for p in parts)
    minimum = sum(p.minimum for p in parts)
    flops = sum(p.flops for p in parts)
    steps = sum(p.steps for p in parts)
    floor = roofline_floor(minimum, flops, chip.hbm_bytes_per_s, chip.bf16_flops_per_s)
    seconds = max(LAUNCH_S * len(parts) + sum(p.seconds for p in parts), floor)
    compute, memory, overhead = (sum(p.compute for p in parts), sum(p.memory for p in parts),
                                 sum(p.overhead for p in parts))
    bound: Bound = max((("compute", compute), ("memory", memory), ("per-step overhead", overhead)),
                       key=lambda kv: kv[1])[0]
    pct = 100.0 * flops / seconds / chip.bf16_flops_per_s if seconds else 0.0
    bw_pct = 100.0 * moved / seconds / chip.hbm_bytes_per_s if seconds else 0.0
    return Estimate(seconds, bound, moved, minimum, flops, steps, chip.chip, pct, floor,
                    _advice(parts, bound, moved, minimum, steps), compute, memory, overhead, bw_pct)


def text(e: Estimate) -> str:
    """The estimate for people (the CLI's and the feedback's wording)."""
    def t(s: float) -> str:
        return f"{s * 1e3:.3f} ms" if s < 1 else f"{s:.2f} s"
    return "\n".join([
        f"Estimated time on a TPU {e.chip}: {t(e.seconds)} ({e.bound}-bound; {e.percent_of_peak:.1f}% of the "
        f"chip's bf16 matrix peak, {e.percent_of_bandwidth:.1f}% of its HBM bandwidth). An estimate from the "
        "kernel's schedule, not a measurement.",
        f"HBM traffic: {e.hbm_bytes / 1e6:,.1f} MB moved; the minimum (each input read once, each output "
        f"written once) is {e.min_hbm_bytes / 1e6:,.1f} MB.",
        f"Grid steps: {e.grid_steps:,}; matrix-unit work {e.flops / 1e9:,.2f} GFLOP; roofline floor "
        f"{t(e.floor_seconds)}.",
        f"Where the time goes: compute {t(e.compute_seconds)}, memory {t(e.memory_seconds)}, per-step "
        f"overhead {t(e.overhead_seconds)}.",
        f"What would help most: {e.advice}."])
