"""What a traced kernel costs, counted from its program (nothing runs): the
facts the speed estimate (``autograder.speed.model``) models a TPU's time from.

Per pallas_call: the grid; per blocked operand, its block's bytes and how many
times the pipeline moves it (a block is fetched when its block index differs
from the previous grid step's, and an output block written back when its index
changes or the grid ends); manual DMAs by the bytes each copy names; and, per
grid step, the kernel body's matrix-unit flops (dot_general), vector element
operations and transcendentals. The chip's figures come from JAX's own table
(``pltpu`` TPU info), by chip name.
"""
from __future__ import annotations

import numpy as np

from .analysis import _block_elems, _index_map, _memory_space, call_sites
from .rung import Traced, sub_jaxprs

TRANSCENDENTAL = frozenset({"exp", "exp2", "log", "log1p", "tanh", "logistic", "sin", "cos", "tan", "pow",
                            "sqrt", "rsqrt", "cbrt", "erf", "erf_inv", "atan2", "expm1"})
FREE = frozenset({"get", "swap", "broadcast_in_dim", "reshape", "squeeze", "expand_dims", "program_id",
                  "num_programs", "iota", "slice", "dynamic_slice", "transpose", "pjit", "jit", "cond",
                  "while", "scan", "run_scoped", "dma_start", "dma_wait", "semaphore_signal",
                  "semaphore_wait", "copy_p", "bitcast_convert_type", "stop_gradient"})
MAX_POINTS = 1 << 20


def _size(aval) -> int:
    return int(np.prod(getattr(aval, "shape", ()) or (1,), dtype=np.int64))


def _bytes(aval) -> int:
    inner = getattr(aval, "inner_aval", aval)
    return _size(inner) * int(np.dtype(inner.dtype).itemsize) if hasattr(inner, "dtype") else 0


def _dot_flops(eqn) -> int:
    (lhs_contract, _rc), _batch = eqn.params["dimension_numbers"]
    lhs = eqn.invars[0].aval
    k = int(np.prod([lhs.shape[d] for d in lhs_contract], dtype=np.int64)) if lhs_contract else 1
    return 2 * _size(eqn.outvars[0].aval) * k


def body_ops(jaxpr, scale: float = 1.0, out: dict | None = None) -> dict:
    """Per-step counts of one kernel body. A loop's body counts its trip count
    times; a pl.when branch counts once at its largest (it may run every step)."""
    out = out if out is not None else {"flops": 0.0, "vector": 0.0, "transcendental": 0.0, "dma_bytes": 0.0}
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name == "dot_general":
            out["flops"] += scale * _dot_flops(eqn)
        elif name in TRANSCENDENTAL:
            out["transcendental"] += scale * _size(eqn.outvars[0].aval)
        elif name == "dma_start":
            out["dma_bytes"] += scale * _dma_bytes(eqn)
        elif name.startswith("reduce_") or name in ("argmax", "argmin", "cumsum", "cummax"):
            out["vector"] += scale * _size(eqn.invars[0].aval)
        elif name not in FREE and eqn.outvars and hasattr(eqn.outvars[0].aval, "shape"):
            out["vector"] += scale * _size(eqn.outvars[0].aval)
        if name == "cond":
            branches = [body_ops(b.jaxpr, scale) for b in eqn.params["branches"]]
            for k in out:
                out[k] += max(b[k] for b in branches)
        elif name == "scan":
            body_ops(eqn.params["jaxpr"].jaxpr, scale * int(eqn.params.get("length", 1)), out)
        else:
            for v in eqn.params.values():
                for sub in sub_jaxprs(v):
                    body_ops(sub, scale, out)
    return out


def _dma_bytes(eqn) -> int:
    """The bytes one DMA copies: its source as transformed (the slice it names)."""
    try:
        src = eqn.params["tree"].unflatten([v.aval for v in eqn.invars])[0]
        return int(np.prod(src.shape, dtype=np.int64)) * int(np.dtype(src.dtype).itemsize)
    except Exception:  # noqa: BLE001 - a DMA whose slice cannot be read counts its whole source
        return _bytes(eqn.invars[0].aval)


def _moves(idx: np.ndarray) -> int:
    """How many times a block index changes along the grid order (the first counts)."""
    if len(idx) == 0:
        return 0
    return 1 + int(np.count_nonzero(np.any(idx[1:] != idx[:-1], axis=1)))


def _operand(k: int, bm, gm, grid: tuple[int, ...], points: np.ndarray | None) -> dict:
    import jax
    is_output = k >= gm.num_inputs
    name = f"output {k - gm.num_inputs}" if is_output else f"input {k}"
    array_bytes = _bytes(bm.array_aval)
    elems = _block_elems(bm.block_shape)
    space = _memory_space(bm.block_aval) if hasattr(bm, "block_aval") else ""
    facts = {"operand": name, "is_output": is_output, "array_bytes": array_bytes, "shape": list(bm.array_aval.shape)}
    if elems is None or "any" in space or "hbm" in space:
        return {**facts, "pipelined": False}      # moved by the kernel's own DMAs (counted there)
    block_bytes = int(np.prod(elems, dtype=np.int64)) * int(np.dtype(bm.array_aval.dtype).itemsize)
    at = _index_map(bm, len(grid), [])
    if isinstance(at, str) or points is None:
        moves = int(np.prod(grid, dtype=np.int64))       # unknown: assume it moves every step
    else:
        cols = [jax.numpy.asarray(points[:, a], jax.numpy.int32) for a in range(len(grid))]
        res = jax.vmap(at)(*cols)
        idx = np.stack([np.broadcast_to(np.asarray(r), (len(points),)) for r in res], axis=1)
        moves = _moves(idx)
    return {**facts, "pipelined": True, "block": list(elems), "block_bytes": block_bytes, "moves": moves}


def chip_facts(chip: str) -> dict:
    """The chip's per-core figures from JAX's TPU table."""
    from jax._src.pallas.mosaic import tpu_info
    info = tpu_info.get_tpu_info_for_chip(tpu_info.ChipVersion(chip), 1)
    return {"chip": chip, "hbm_bytes_per_s": int(info.mem_bw_bytes_per_second),
            "bf16_flops_per_s": int(info.bf16_ops_per_second), "vmem_bytes": int(info.vmem_capacity_bytes),
            "lanes": int(info.num_lanes), "sublanes": int(info.num_sublanes), "mxus": int(info.num_mxus)}


def speed_facts(traced: Traced, chip: str = "v5e") -> dict:
    """Every pallas_call's schedule and per-step work, and the chip's figures."""
    from .blockmap import grid_points
    calls = []
    for site in call_sites(traced):
        eqn = site.eqn
        gm = eqn.params["grid_mapping"]
        grid = tuple(int(g) for g in gm.grid)
        steps = int(np.prod(grid, dtype=np.int64))
        points = grid_points(grid) if grid and steps <= MAX_POINTS else None
        operands = [_operand(k, bm, gm, grid, points) for k, bm in enumerate(gm.block_mappings)]
        ops = body_ops(eqn.params["jaxpr"])
        calls.append({"grid": list(grid), "steps": steps, "operands": operands, "per_step": ops,
                      "dtype": str(eqn.params["out_avals"][0].dtype) if eqn.params["out_avals"] else ""})
    return {"calls": calls, "chip": chip_facts(chip), "pallas_calls": len(calls)}
