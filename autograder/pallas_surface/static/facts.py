"""What a static analysis says about a traced kernel, as frozen, typed objects.

The grader's child computes the facts (``analysis``, ``blockmap``, ``cost``)
and sends them as JSON; the parent decodes them here once (``decode``), checking
every field's type and bound, and from then on reads attributes, never string
keys. The wire stays JSON. No JAX here: the parent imports this module.
"""
from __future__ import annotations

import math
import types
import typing
from dataclasses import MISSING, dataclass, fields, is_dataclass
from typing import Any, Union

MAX_INT = 2 ** 62
MAX_TEXT = 20_000
MAX_ITEMS = 100_000

Point = tuple[int, ...]
Range = tuple[tuple[int, int], ...]


class FactsError(ValueError):
    """Facts that do not have the form their analysis promises: names the field and the value seen."""


# ---- index maps (``analysis.index_maps`` and ``blockmap.analyse``)

@dataclass(frozen=True)
class OutOfBounds:
    grid_point: Point
    block_index: Point
    element_range: Range
    array_shape: Point


@dataclass(frozen=True)
class PartialBlock:
    block_index: Point
    element_range: Range


@dataclass(frozen=True)
class Revisit:
    block_index: Point
    grid_point: Point
    previous_grid_point: Point
    writers: tuple[Point, ...] = ()     # every grid point writing the block, in order (capped)


@dataclass(frozen=True)
class ParallelShared:
    block_index: Point
    grid_points: tuple[Point, ...]
    axis: int
    writers: tuple[Point, ...] = ()     # every grid point writing the block, in order (capped)


@dataclass(frozen=True)
class OutsideBlock:
    """A block that starts outside its array, and the first grid point that asks for it."""
    block_index: Point
    grid_point: Point


@dataclass(frozen=True)
class OperandMap:
    """One operand's block indices over the whole grid, summarized."""
    operand: str
    is_output: bool
    array_shape: Point
    block_shape: Point
    grid: Point
    out_of_bounds: tuple[OutOfBounds, ...]
    out_of_bounds_count: int
    partial_blocks: tuple[PartialBlock, ...]
    partial_count: int
    outside_blocks: tuple[OutsideBlock, ...] = ()   # every distinct one (capped)
    unread_count: int = 0                           # inputs only: blocks no grid point reads
    arg: int | None = None                          # inputs only: the function's array argument it is, unchanged
    # Outputs only (empty for inputs):
    unwritten_blocks: tuple[Point, ...] = ()
    unwritten_count: int = 0
    block_grid: Point = ()
    revisits: tuple[Revisit, ...] = ()
    reduction_axes: tuple[int, ...] = ()
    parallel_shared: tuple[ParallelShared, ...] = ()
    revisited_blocks: tuple[Point, ...] = ()        # every block written again later (capped)
    shared_blocks: tuple[Point, ...] = ()           # every block shared across a parallel axis (capped)


@dataclass(frozen=True)
class Skipped:
    operand: str
    why: str


@dataclass(frozen=True)
class BlockReads:
    """One output block, and the blocks of an input the grid points writing it read."""
    block: Point
    reads: tuple[Point, ...]


@dataclass(frozen=True)
class ReadSet:
    output: str
    input: str
    blocks: tuple[BlockReads, ...]


@dataclass(frozen=True)
class CallMap:
    grid: Point
    dimension_semantics: tuple[str, ...]
    operands: tuple[OperandMap, ...]
    skipped: tuple[Skipped, ...]
    returned: bool = False                 # its output 0 is what the function returns, unchanged
    reads: tuple[ReadSet, ...] = ()        # what each output block's steps read of each input


@dataclass(frozen=True)
class IndexMaps:
    calls: tuple[CallMap, ...]


# ---- TPU compile readiness (``analysis.lower_for_tpu``)

@dataclass(frozen=True)
class Compile:
    ok: bool
    type: str = ""
    rule: str = ""
    message: str = ""


# ---- VMEM at the production size (``analysis.vmem_budget``)

@dataclass(frozen=True)
class Allocation:
    shape: Point
    dtype: str
    bytes: int


@dataclass(frozen=True)
class Block:
    operand: str
    shape: Point
    dtype: str
    buffers: int
    buffering: str
    bytes: int


@dataclass(frozen=True)
class VmemCall:
    blocks: tuple[Block, ...]
    scratch: tuple[Allocation, ...]
    scoped: tuple[Allocation, ...]
    bytes: int


@dataclass(frozen=True)
class Vmem:
    calls: tuple[VmemCall, ...]
    bytes: int


# ---- where the work happens (``analysis.structure``)

@dataclass(frozen=True)
class Structure:
    pallas_calls: int
    # What touches data outside every kernel beyond moving it (``outside``): a primitive's name,
    # or "data-index: p", "data-control: p", "ref: p" -> how often.
    outside: dict[str, int]
    manual_dma: bool
    kernel_primitives: tuple[str, ...]


# ---- the schedule, for the speed estimate (``cost.speed_facts``)

@dataclass(frozen=True)
class Chip:
    """One TensorCore's figures from JAX's TPU table (``pltpu`` TPU info), and
    how many TensorCores the chip has."""
    chip: str
    hbm_bytes_per_s: int
    bf16_flops_per_s: int
    vmem_bytes: int
    lanes: int
    sublanes: int
    mxus: int
    mxu_columns: int                 # the matrix unit is mxu_columns x mxu_columns
    int8_ops_per_s: int              # 0: no native rate (the table says "not available")
    fp8_ops_per_s: int
    int4_ops_per_s: int
    tensor_cores: int                # physical TensorCores per chip
    megacore: bool                   # one device of two TensorCores that split 'parallel' grid axes


@dataclass(frozen=True)
class StepWork:
    """One class of grid steps: ``steps`` grid points that do the same work and
    move the same bytes."""
    steps: int
    mxu_flops: dict[str, float]      # matrix-unit flops by rate class (``cost.RATE_CLASSES``)
    vector: float                    # vector-unit element operations
    transcendental: float            # EUP operations (exp, log, reciprocal, ...)
    dma_bytes: float                 # bytes the kernel's own DMAs copy
    block_bytes: float               # pipelined blocks fetched (for the next step) or written back
    dots: float = 0.0                # dot_general executions outside loops (``stepwork.LOOP_COLUMNS``)
    loop_dots: float = 0.0           # ... inside a loop body
    loop_vector: float = 0.0         # vector operations inside a loop body (part of ``vector``)
    dma_starts: float = 0.0          # manual DMAs started
    loop_reductions: float = 0.0     # lane reductions inside a loop body
    chain: float = 0.0               # the longest chain of dependent dots and lane reductions (outside loops)
    dma_exposed: float = 0.0         # manual DMA waits with no other DMA in flight (their latency shows)
    loop_carry: float = 0.0          # elements a loop carries from one iteration to the next, summed over trips
    loop_trips: float = 0.0          # loop iterations
    sync_bytes: float = 0.0          # single-buffered (pl.Buffered(1)) blocks moved: nothing overlaps them
    sync_moves: float = 0.0          # ... how many such copies
    pipeline_steps: float = 0.0      # iterations of loops that start DMAs (an inner pipeline's steps)


@dataclass(frozen=True)
class CostOperand:
    operand: str
    is_output: bool
    array_bytes: int
    shape: Point
    pipelined: bool
    block: Point = ()
    block_bytes: int = 0
    moves: int = 0
    buffers: int = 2                 # pipeline buffers (pl.Buffered(n)); 1: each copy waits for the step


@dataclass(frozen=True)
class InnerBlock:
    """A block an inner pipeline copies (a DMA started inside a loop of the kernel)."""
    operand: int                     # its index among the call's operands; -1: none (scratch to scratch)
    block: Point


@dataclass(frozen=True)
class CostCall:
    grid: Point
    steps: int
    operands: tuple[CostOperand, ...]
    step_classes: tuple[StepWork, ...]
    dtype: str
    dimension_semantics: tuple[str, ...]
    data_dependent: bool             # index maps, conditions or loop bounds read scalar-prefetch data
                                     # computed from the function's arguments (the data drawn)
    copy_bytes: int                  # HBM bytes XLA copies for aliased inputs not donated (read + write)
    vmem_bytes: int = 0              # the call's blocks, scratch and scoped allocations (analysis.call_vmem)
    vmem_limit: int = 0              # its own scoped-VMEM limit (CompilerParams); 0: the chip's default
    problem: str = ""                # why this call cannot be estimated ("" when it can)
    inner_blocks: tuple[InnerBlock, ...] = ()   # what its inner pipelines' DMAs copy


@dataclass(frozen=True)
class Schedule:
    calls: tuple[CostCall, ...]
    chip: Chip
    pallas_calls: int
    host_prints: int = 0             # jax.debug.print outside every kernel (a host callback each call)


Facts = Union[IndexMaps, Compile, Vmem, Structure, Schedule]

KINDS: dict[str, type] = {"index-maps": IndexMaps, "compile": Compile, "vmem": Vmem, "structure": Structure,
                          "speed": Schedule}


def kind_of(analysis: str) -> type:
    """The facts type of an analysis name (``speed:v5e`` is a ``Schedule``)."""
    kind = KINDS.get(analysis.split(":", 1)[0])
    if kind is None:
        raise FactsError(f"analysis: must be one of {sorted(KINDS)}; got {analysis!r}")
    return kind


def decode(analysis: str, raw: Any) -> Facts:
    """The typed facts of one analysis, every field checked (raises FactsError)."""
    return _value(kind_of(analysis), raw, analysis)


def _value(hint: Any, raw: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    if is_dataclass(hint):
        return _object(hint, raw, where)
    if origin in (Union, types.UnionType):
        options = typing.get_args(hint)
        if raw is None and type(None) in options:
            return None
        return _value(next(o for o in options if o is not type(None)), raw, where)
    if origin is tuple:
        item = typing.get_args(hint)[0]
        if not isinstance(raw, list) or len(raw) > MAX_ITEMS:
            raise FactsError(f"{where}: must be a list of at most {MAX_ITEMS}; got {type(raw).__name__}")
        return tuple(_value(item, v, f"{where}[{i}]") for i, v in enumerate(raw))
    if origin is dict:
        _key, item = typing.get_args(hint)
        if not isinstance(raw, dict) or len(raw) > MAX_ITEMS:
            raise FactsError(f"{where}: must be an object; got {type(raw).__name__}")
        return {_value(str, k, f"{where} key"): _value(item, v, f"{where}.{k}") for k, v in raw.items()}
    return _scalar(hint, raw, where)


def _scalar(hint: Any, raw: Any, where: str) -> Any:
    if hint is bool:
        if isinstance(raw, bool):
            return raw
    elif hint is int:
        if isinstance(raw, int) and not isinstance(raw, bool) and abs(raw) <= MAX_INT:
            return raw
    elif hint is float:
        if isinstance(raw, (int, float)) and not isinstance(raw, bool) and math.isfinite(raw):
            return float(raw)
    elif hint is str:
        if isinstance(raw, str) and len(raw) <= MAX_TEXT:
            return raw
    else:
        raise FactsError(f"{where}: no decoder for {hint!r}")
    raise FactsError(f"{where}: must be a bounded {hint.__name__}; got {type(raw).__name__} {str(raw)[:80]!r}")


def _object(cls: type, raw: Any, where: str) -> Any:
    if not isinstance(raw, dict):
        raise FactsError(f"{where}: must be an object; got {type(raw).__name__}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(raw) - names)
    if unknown:
        raise FactsError(f"{where}: unknown field {unknown[0]!r} (known: {sorted(names)})")
    values = {}
    for f in fields(cls):
        if f.name in raw:
            values[f.name] = _value(hints[f.name], raw[f.name], f"{where}.{f.name}")
        elif f.default is MISSING:
            raise FactsError(f"{where}: field {f.name!r} is missing")
    return cls(**values)


def encode(facts: Any) -> Any:
    """JSON-ready data of typed facts (what ``decode`` reads back): for
    calibration files, which keep the solution's schedule."""
    if is_dataclass(facts):
        return {f.name: encode(getattr(facts, f.name)) for f in fields(facts)}
    if isinstance(facts, tuple):
        return [encode(v) for v in facts]
    if isinstance(facts, dict):
        return {k: encode(v) for k, v in facts.items()}
    return facts
