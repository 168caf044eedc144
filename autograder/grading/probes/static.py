"""Static probes: read the traced kernel, never run it."""
from __future__ import annotations

from ...pallas_surface.release import COMPILE_RULES
from ..findings import Finding
from ..plan import Variant
from .base import Probe, ProbeResults


def _one(analysis: str, inputs: str = "case"):
    def plan(assignment, case, rubric):
        return (Variant(analysis, "static", analysis=analysis, inputs=inputs),)
    return plan


def _tuple(x) -> str:
    return "(" + ", ".join(str(v) for v in x) + ")"


def judge_index_maps(r: ProbeResults) -> list[Finding]:
    facts = r.facts("index-maps")
    if facts is None:
        return []
    found: list[Finding] = []
    for ci, call in enumerate(facts["calls"]):
        where = f" (pallas_call {ci + 1})" if len(facts["calls"]) > 1 else ""
        for op in call["operands"]:
            if op["out_of_bounds"]:
                ex = op["out_of_bounds"][0]
                rng = ", ".join(f"{a}:{b}" for a, b in ex["element_range"])
                found.append(r.finding(
                    "out-of-bounds",
                    f"{op['operand']}{where} at grid point {_tuple(ex['grid_point'])} addresses block "
                    f"{_tuple(ex['block_index'])}, elements [{rng}], of an array of shape "
                    f"{_tuple(ex['array_shape'])}: the block starts outside the array",
                    operand=op["operand"], grid_point=ex["grid_point"], block_index=ex["block_index"],
                    element_range=ex["element_range"], array_shape=ex["array_shape"],
                    block_shape=op["block_shape"], grid=call["grid"], count=op["out_of_bounds_count"],
                    examples=op["out_of_bounds"], variant="index-maps", stops_tpu_interpret=True))
            if not op["is_output"]:
                continue
            if op["unwritten_count"]:
                found.append(r.finding(
                    "uninitialized-memory",
                    f"{op['operand']}{where}: {op['unwritten_count']} of its blocks are never visited "
                    f"by the grid (e.g. block {_tuple(op['unwritten_blocks'][0])}), so they are never "
                    "written",
                    operand=op["operand"], unwritten_blocks=op["unwritten_blocks"],
                    unwritten_count=op["unwritten_count"], block_grid=op["block_grid"],
                    grid=call["grid"], static=True, variant="index-maps"))
            if op["revisits"]:
                ex = op["revisits"][0]
                found.append(r.finding(
                    "output-block-revisit",
                    f"{op['operand']}{where}: block {_tuple(ex['block_index'])} is written at grid point "
                    f"{_tuple(ex['previous_grid_point'])} and again at {_tuple(ex['grid_point'])}, with "
                    "other blocks in between",
                    operand=op["operand"], block_index=ex["block_index"],
                    grid_points=[ex["previous_grid_point"], ex["grid_point"]], grid=call["grid"],
                    kind="non-consecutive", dimension_semantics=call["dimension_semantics"],
                    variant="index-maps", stops_tpu_interpret=True))
            elif op["parallel_shared"]:
                ex = op["parallel_shared"][0]
                found.append(r.finding(
                    "output-block-revisit",
                    f"{op['operand']}{where}: block {_tuple(ex['block_index'])} is written at grid points "
                    f"{_tuple(ex['grid_points'][0])} and {_tuple(ex['grid_points'][1])}, which differ "
                    f"along axis {ex['axis']}, marked parallel",
                    operand=op["operand"], block_index=ex["block_index"], grid_points=ex["grid_points"],
                    axis=ex["axis"], grid=call["grid"], kind="parallel-shared",
                    dimension_semantics=call["dimension_semantics"], variant="index-maps"))
    return found


def judge_compile(r: ProbeResults) -> list[Finding]:
    facts = r.facts("compile")
    if facts is None or facts.get("ok"):
        return []
    message = facts.get("message", "")
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


def judge_vmem(r: ProbeResults) -> list[Finding]:
    facts = r.facts("vmem")
    prod = r.assignment.production
    if facts is None or prod is None or facts["bytes"] <= prod.vmem_limit_bytes:
        return []
    call = max(facts["calls"], key=lambda c: c["bytes"])
    mib = facts["bytes"] / 2 ** 20
    limit = prod.vmem_limit_bytes / 2 ** 20
    return [r.finding("vmem-overflow",
                      f"at the real problem size the kernel needs {mib:.1f} MiB of VMEM; {prod.chip} "
                      f"allows {limit:.0f} MiB", bytes=facts["bytes"], limit_bytes=prod.vmem_limit_bytes,
                      chip=prod.chip, blocks=call["blocks"], scratch=call["scratch"],
                      scoped=call.get("scoped", []),
                      production_dims=dict(prod.dims), production_dtype=prod.dtype, variant="vmem")]


def judge_structure(r: ProbeResults) -> list[Finding]:
    facts = r.facts("structure")
    if facts is None:
        return []
    s = r.assignment.structure
    if facts["pallas_calls"] == 0:
        return [r.finding("not-a-kernel", "no pallas_call does the work: the function computes its "
                          "result with ordinary jax.numpy operations", pallas_calls=0,
                          outside=facts["outside"], problem="no-pallas-call", variant="structure")]
    heavy = {k: v for k, v in facts["outside"].items() if k not in s.allow}
    if heavy:
        names = ", ".join(sorted(heavy))
        return [r.finding("not-a-kernel", f"work happens outside the kernel: {names} run as ordinary "
                          "jax.numpy operations around the pallas_call", outside=heavy,
                          pallas_calls=facts["pallas_calls"], problem="work-outside", variant="structure")]
    if "manual-dma" in s.require and not facts["manual_dma"]:
        return [r.finding("not-a-kernel", "the assignment requires manual DMA "
                          "(pltpu.make_async_copy from an HBM ref), and the kernel never starts one",
                          problem="technique-missing", technique="manual-dma",
                          pallas_calls=facts["pallas_calls"], variant="structure")]
    return []


INDEX_MAPS = Probe("index-maps", "Static: index maps over the whole grid", "static",
                   ("out-of-bounds", "uninitialized-memory", "output-block-revisit"),
                   _one("index-maps"), judge_index_maps)
COMPILE = Probe("compile", "Static: TPU compile readiness", "static", ("compile-reject",),
                _one("compile"), judge_compile)
VMEM = Probe("vmem", "Static: VMEM budget at the real problem size", "static", ("vmem-overflow",),
             _one("vmem", inputs="production"), judge_vmem, per_case=False)
STRUCTURE = Probe("structure", "Static: the work is done in a kernel", "static", ("not-a-kernel",),
                  _one("structure"), judge_structure, per_case=False)
