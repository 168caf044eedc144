"""Static probes: read the traced kernel, never run it."""
from __future__ import annotations

import re

from ...findings import Finding
from ...pallas_surface.program import schema
from ...pallas_surface.release import COMPILE_RULES, compiler_words
from ...pallas_surface.static.facts import CallMap, Compile, IndexMaps, OperandMap, Structure, Vmem, encode
from ...spec import ProbeTerms
from ..judge import regions
from ..run.plan import Variant
from .base import Probe, ProbeResults


def _one(analysis: str, inputs: str = "case"):
    def plan(assignment, case, rubric, run_key):
        return (Variant(analysis, "static", analysis=analysis, inputs=inputs),)
    return plan


def _tuple(x) -> str:
    return "(" + ", ".join(str(v) for v in x) + ")"


def judge_index_maps(r: ProbeResults) -> list[Finding]:
    scan: IndexMaps | None = r.facts("index-maps")
    if scan is None:
        return []
    found: list[Finding] = []
    for ci, call in enumerate(scan.calls):
        where = f" (pallas_call {ci + 1})" if len(scan.calls) > 1 else ""
        for op in call.operands:
            found += _operand_findings(r, call, op, where)
    return found


def _operand_findings(r: ProbeResults, call: CallMap, op: OperandMap, where: str) -> list[Finding]:
    found = []
    if op.out_of_bounds:
        ex = op.out_of_bounds[0]
        rng = ", ".join(f"{a}:{b}" for a, b in ex.element_range)
        found.append(r.finding(
            "out-of-bounds",
            f"{op.operand}{where} at grid point {_tuple(ex.grid_point)} addresses block "
            f"{_tuple(ex.block_index)}, elements [{rng}], of an array of shape "
            f"{_tuple(ex.array_shape)}: the block starts outside the array",
            operand=op.operand, grid_point=ex.grid_point, block_index=ex.block_index,
            element_range=ex.element_range, array_shape=ex.array_shape,
            block_shape=op.block_shape, grid=call.grid, count=op.out_of_bounds_count,
            examples=[encode(e) for e in op.out_of_bounds], variant="index-maps", stops_tpu_interpret=True,
            # What the map draws: every block asked for outside, and the window the
            # generic interpreter reads instead of the first (it clamps the start).
            outside_blocks=[encode(b) for b in op.outside_blocks],
            read_instead=regions.clamped(ex.element_range, ex.array_shape), **_crossed(call, op)))
    if not op.is_output:
        return found
    if op.unwritten_count:
        found.append(r.finding(
            "uninitialized-memory",
            f"{op.operand}{where}: {op.unwritten_count} of its blocks are never visited "
            f"by the grid (e.g. block {_tuple(op.unwritten_blocks[0])}), so they are never written",
            operand=op.operand, unwritten_blocks=op.unwritten_blocks, unwritten_count=op.unwritten_count,
            block_grid=op.block_grid, grid=call.grid, static=True, variant="index-maps", problem="unwritten-blocks",
            array_shape=op.array_shape, block_shape=op.block_shape))
    if op.revisits:
        ex = op.revisits[0]
        found.append(r.finding(
            "output-block-revisit",
            f"{op.operand}{where}: block {_tuple(ex.block_index)} is written at grid point "
            f"{_tuple(ex.previous_grid_point)} and again at {_tuple(ex.grid_point)}, with "
            "other blocks in between",
            operand=op.operand, block_index=ex.block_index,
            grid_points=[ex.previous_grid_point, ex.grid_point], grid=call.grid,
            kind="non-consecutive", dimension_semantics=call.dimension_semantics,
            variant="index-maps", stops_tpu_interpret=True, writers=ex.writers,
            revisited_blocks=op.revisited_blocks, array_shape=op.array_shape, block_shape=op.block_shape))
    elif op.parallel_shared:
        ex = op.parallel_shared[0]
        found.append(r.finding(
            "output-block-revisit",
            f"{op.operand}{where}: block {_tuple(ex.block_index)} is written at grid points "
            f"{_tuple(ex.grid_points[0])} and {_tuple(ex.grid_points[1])}, which differ "
            f"along axis {ex.axis}, marked parallel",
            operand=op.operand, block_index=ex.block_index, grid_points=ex.grid_points,
            axis=ex.axis, grid=call.grid, kind="parallel-shared",
            dimension_semantics=call.dimension_semantics, variant="index-maps", writers=ex.writers,
            shared_blocks=op.shared_blocks,
            array_shape=op.array_shape, block_shape=op.block_shape))
    return found


def _oob_facts(call: CallMap, op: OperandMap) -> dict:
    return {"array_shape": list(op.array_shape), "block_shape": list(op.block_shape), "grid": list(call.grid),
            "examples": [encode(e) for e in op.out_of_bounds]}


def _crossed(call: CallMap, op: OperandMap) -> dict:
    """An index map that sends a grid axis to another block axis (``regions.crossed_axes``),
    as a word a secret case keeps (``secrecy.KEPT``): the operand, in the scan's own words
    ("input 0"), where the fault's line is its index map. Said without a size, a seed or
    an axis, so the feedback can place and name it on a secret case too."""
    if regions.crossed_axes(_oob_facts(call, op)) is None:
        return {}
    return {"map_axes": op.operand if re.fullmatch(r"(input|output) \d+", op.operand) else "crossed"}


def judge_compile(r: ProbeResults) -> list[Finding]:
    compiled: Compile | None = r.facts("compile")
    if compiled is None or compiled.ok:
        return []
    message = compiler_words(compiled.message)
    rule_id, rule = "lowering", "the TPU lowering refused the kernel"
    op = None
    for pattern, rid, text in COMPILE_RULES:
        m = pattern.search(message)
        if m:
            rule_id, rule = rid, text
            op = m.group(1) if m.groups() else None
            break
    headline = message.split("\n")[0][:300]
    return [r.finding("compile-reject", f"the TPU compiler would refuse this kernel: {rule}"
                      + (f" (operation: {op})" if op else ""),
                      rule=rule, rule_id=rule_id, compiler_message=message[:3000],
                      headline=headline, operation=op, variant="compile")]


def plan_vmem(assignment, case, rubric, run_key):
    """The budget at the production size (what the chip will run), with the
    index-map scan there (the budget is a figure only for a kernel whose grid
    and blocks cover its arrays at that size), and at each graded case's own
    size (every signature is analysed)."""
    return (Variant("vmem", "static", analysis="vmem", inputs="production"),
            Variant("coverage", "static", analysis="index-maps", inputs="production"),
            Variant("vmem-case", "static", analysis="vmem"))


def uncovered(scan: IndexMaps | None) -> tuple[str, str] | None:
    """Where a kernel's grid and blocks do not cover its arrays, by the index-map
    scan of one size: (the finding ID, in words), or None when they do."""
    for ci, call in enumerate(scan.calls if scan is not None else ()):
        where = f" (pallas_call {ci + 1})" if len(scan.calls) > 1 else ""
        for op in call.operands:
            if op.out_of_bounds:
                ex = op.out_of_bounds[0]
                swap = regions.crossed_axes(_oob_facts(call, op))
                crossed = f" (its index map sends grid axis {swap[0]} to block axis {swap[1]})" if swap else ""
                return "out-of-bounds", (f"{op.operand}{where} at grid point {_tuple(ex.grid_point)} addresses "
                                         f"block {_tuple(ex.block_index)}, outside its array{crossed}")
            if op.is_output and op.unwritten_count:
                return "uninitialized-memory", (f"{op.unwritten_count} blocks of {op.operand}{where} are never "
                                                "visited by the grid")
            if op.is_output and (op.revisits or op.parallel_shared):
                return "output-block-revisit", f"blocks of {op.operand}{where} are written again out of order"
    return None


def unread_inputs(scan: IndexMaps | None, graded: list[IndexMaps]) -> str:
    """The inputs whose blocks the grid at one size never reads all of, where every
    graded scan reads each of that input's blocks ("" when none): the graded kernel
    reads its inputs in full, so at that size it would do less work than graded.
    (A kernel that reads some inputs in part at a graded size, a lookup by
    scalar-prefetched positions, is held to nothing here.)"""
    def full(s: IndexMaps, ci: int, name: str) -> bool:
        calls = s.calls
        ops = [op for op in calls[ci].operands if op.operand == name] if ci < len(calls) else []
        return bool(ops) and ops[0].unread_count == 0
    said = []
    for ci, call in enumerate(scan.calls if scan is not None and graded else ()):
        where = f" (pallas_call {ci + 1})" if len(scan.calls) > 1 else ""
        for op in call.operands:
            if op.is_output or not op.unread_count or not all(full(g, ci, op.operand) for g in graded):
                continue
            said.append(f"{op.unread_count} blocks of {op.operand}{where}")
    return "; ".join(said)


def judge_vmem(r: ProbeResults) -> list[Finding]:
    prod = r.assignment.production
    if prod is None:
        return []
    hole = uncovered(r.facts("coverage")) if "vmem" in r.runs else None
    if hole is not None:
        fid, words = hole
        return [r.finding(fid, f"at the real problem size {words}: the VMEM budget is no figure for a kernel "
                          "that does not cover its arrays there", variant="coverage", problem="not-covered",
                          production_dims=dict(prod.dims))]
    for variant in ("vmem", "vmem-case"):
        budget: Vmem | None = r.facts(variant)
        if budget is not None and budget.bytes > prod.vmem_limit_bytes:
            return [_overflow(r, budget, prod, variant)]
    return []


def _overflow(r: ProbeResults, budget: Vmem, prod, variant: str) -> Finding:
    at_case = variant == "vmem-case"
    call = max(budget.calls, key=lambda c: c.bytes)
    mib = budget.bytes / 2 ** 20
    limit = prod.vmem_limit_bytes / 2 ** 20
    where = "at this case's size" if at_case else "at the real problem size"
    dims = dict(r.case.dims) if at_case else dict(prod.dims)
    return r.finding("vmem-overflow",
                     f"{where} the kernel needs {mib:.1f} MiB of VMEM; {prod.chip} "
                     f"allows {limit:.0f} MiB", bytes=budget.bytes, limit_bytes=prod.vmem_limit_bytes,
                     chip=prod.chip, blocks=[encode(b) for b in call.blocks],
                     scratch=[encode(a) for a in call.scratch], scoped=[encode(a) for a in call.scoped],
                     production_dims=dims, production_dtype=r.case.dtype if at_case else prod.dtype,
                     variant=variant)


def _glue(violation: str, allow: tuple[str, ...]) -> bool:
    """Whether the spec allows this violation outside a kernel: a primitive by its
    name, a position or decision read from data by its kind; a ref never."""
    kind, _, _prim = violation.partition(": ")
    return violation in allow or (kind in schema.OUTSIDE_KINDS and kind in allow)


# What each kind of violation means (pallas_surface.outside), in the finding's words.
_KIND_WORDS = {"data-index": "positions read from data", "data-control": "decisions on data",
               "ref": "refs outside any kernel"}


def _outside_words(heavy: dict[str, int]) -> str:
    """The violations as a phrase: computing primitives first, then each other kind."""
    prims = sorted(k for k in heavy if ": " not in k)
    kinds: dict[str, list[str]] = {}
    for k in sorted(heavy):
        if ": " in k:
            kind, _, prim = k.partition(": ")
            kinds.setdefault(kind, []).append(prim)
    said = [f"{', '.join(prims)} computing on the inputs' data"] if prims else []
    said += [f"{_KIND_WORDS.get(kind, kind)} ({', '.join(ps)})" for kind, ps in kinds.items()]
    return "; ".join(said)


def judge_structure(r: ProbeResults) -> list[Finding]:
    facts: Structure | None = r.facts("structure")
    if facts is None:
        return []
    s = r.assignment.structure
    if facts.pallas_calls == 0:
        return [r.finding("not-a-kernel", "no pallas_call does the work: the function computes its "
                          "result with ordinary jax.numpy operations", pallas_calls=0,
                          outside=facts.outside, problem="no-pallas-call", variant="structure")]
    heavy = {k: v for k, v in facts.outside.items() if not _glue(k, s.allow)}
    if heavy:
        return [r.finding("not-a-kernel", f"work happens outside the kernel: {_outside_words(heavy)}; "
                          "outside a pallas_call, data may only be moved (reshaped, transposed, sliced, "
                          "padded, concatenated, cast) and handed to kernels", outside=heavy,
                          pallas_calls=facts.pallas_calls, problem="work-outside", variant="structure")]
    if "manual-dma" in s.require and not facts.manual_dma:
        return [r.finding("not-a-kernel", "the assignment requires manual DMA "
                          "(pltpu.make_async_copy from an HBM ref), and the kernel never starts one",
                          problem="technique-missing", technique="manual-dma",
                          pallas_calls=facts.pallas_calls, variant="structure")]
    return []


INDEX_MAPS = Probe(
    ProbeTerms("index-maps", "Static: index maps over the whole grid", "static",
               ("out-of-bounds", "uninitialized-memory", "output-block-revisit")),
    _one("index-maps"), judge_index_maps,
    note="evaluates every index map at every grid point: blocks outside an array, output blocks "
         "never written, or written again after other blocks.")
COMPILE = Probe(
    ProbeTerms("compile", "Static: TPU compile readiness", "static", ("compile-reject",), examines_kernel=False),
    _one("compile"), judge_compile,
    note="lowers your kernel for a TPU on the CPU (Pallas's TPU lowering): block tiling, dtypes and "
         "operations the compiler would refuse.")
VMEM = Probe(
    ProbeTerms("vmem", "Static: VMEM budget at the real problem size", "static", ("vmem-overflow",),
               per_case=False),
    plan_vmem, judge_vmem,
    note="adds up the kernel's VMEM (each pipelined block twice, scratch, pl.run_scoped buffers) at the "
         "real problem size, against the chip's.")
STRUCTURE = Probe(
    ProbeTerms("structure", "Static: the work is done in a kernel", "static", ("not-a-kernel",),
               per_case=False, examines_kernel=False),
    _one("structure"), judge_structure,
    note="finds where the work is done: in the pl.pallas_call, not in jax.numpy around it.")
