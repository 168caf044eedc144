"""What a rung changes in a pallas_call before binding it: the kernel as the
student wrote it, in the form that rung's interpreter runs (the static analyses
see it as written). Each is a workaround of an interpreter's limit that a TPU
does not have, with a canary (tests/test_canaries.py) that says when it can go.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

from jax._src import core as jax_core

from ..program import jaxprs


def aliases_partial_blocks(p: dict) -> bool:
    """Whether a pallas_call aliases an input whose blocks do not divide it.

    TPU interpret mode pads every input to whole blocks and then hands the padded
    input back as the aliased output, whose declared shape is the unpadded one,
    so the program fails to lower ("type of return operand ... doesn't match
    function result type"; jax 0.10.2 and 0.12.0.1). A TPU runs it: the partial
    block's write-back is masked. On that rung only, the alias is dropped: the
    output then starts from the fill instead of the input, which changes nothing
    for a kernel that writes its whole output (an in-place update), the common
    reason to alias.
    """
    from jax._src.pallas import core as pallas_core
    gm = p["grid_mapping"]
    for operand, _out in p.get("input_output_aliases") or ():
        index = operand - gm.num_index_operands
        if index < 0:
            continue
        bm = gm.block_mappings[index]
        block = pallas_core._get_block_shape(bm.block_shape)
        if any(b and dim % b for b, dim in zip(block, bm.array_aval.shape)):
            return True
    return False


def parallel_after_arbitrary(semantics: Sequence[Any] | None) -> tuple[int, ...]:
    """The grid axes marked "parallel" after an axis that is not: TPU interpret
    mode refuses them ("Dimensions with parallel semantics must form a prefix of
    the grid", jax 0.10.2 and 0.12.0.1), while the TPU compiler accepts them and
    a v5e runs them right (measured, libtpu 0.0.42.1)."""
    from jax._src.pallas.mosaic import core as tpu_core
    parallel = [ds in ("parallel", tpu_core.PARALLEL) for ds in semantics or ()]
    first = parallel.index(False) if False in parallel else len(parallel)
    return tuple(i for i in range(first, len(parallel)) if parallel[i])


def parallel_as_prefix(p: dict) -> dict:
    """A pallas_call's parameters for TPU interpret mode: every "parallel" axis
    after a non-parallel one run as "arbitrary" (in order, on one core, as a
    one-core TPU runs the whole grid), the only form of these semantics that
    interpreter runs. The axes before keep theirs; nothing else changes."""
    cp = p.get("compiler_params")
    sem = getattr(cp, "dimension_semantics", None)
    later = parallel_after_arbitrary(sem)
    if not later:
        return p
    semantics = tuple("arbitrary" if i in later else ds for i, ds in enumerate(sem))
    return {**p, "compiler_params": dataclasses.replace(cp, dimension_semantics=semantics)}


def cores_as_grid(body: Any, mesh: Any) -> Any:
    """A mesh kernel's body for the generic interpreter: it runs the mesh's cores
    as the points of the grid the mesh is (one after another, as it runs a
    'parallel' axis), but cannot answer ``lax.axis_index`` over the mesh's axis,
    which it has no environment for: each becomes ``pl.program_id`` of that axis
    (what TPU interpret mode answers it with), in sub-programs too."""
    from jax._src.lax.parallel import axis_index_p
    from jax._src.pallas.primitives import program_id_p
    names = list(mesh.shape)

    def subst(value: Any) -> Any:
        if jaxprs.is_closed(value) and value.jaxpr is not value:
            return value.replace(jaxpr=subst(value.jaxpr))
        if isinstance(value, jax_core.Jaxpr):
            return value.replace(eqns=[eqn_of(e) for e in value.eqns])
        if isinstance(value, tuple):
            return tuple(subst(v) for v in value)
        return value

    def eqn_of(e: Any) -> Any:
        axis = e.params.get("axis_name") if e.primitive is axis_index_p else None
        if axis in names:
            return e.replace(primitive=program_id_p, params={"axis": names.index(axis)})
        if axis is not None and isinstance(axis, tuple) and len(axis) == 1 and axis[0] in names:
            return e.replace(primitive=program_id_p, params={"axis": names.index(axis[0])})
        return e.replace(params={k: subst(v) for k, v in e.params.items()})
    return subst(body)


def in_order(interpret: Any) -> Callable:
    """A pallas_call stub that binds the kernel with every grid axis 'arbitrary':
    TPU interpret mode then runs the grid in row-major order on one core (it
    shuffles axes marked 'parallel' on every run, random_seed or not)."""
    def bind(eqn: Any, invals: list) -> Any:
        p = {**eqn.params, "interpret": interpret}
        cp = p.get("compiler_params")
        sem = getattr(cp, "dimension_semantics", None)
        if sem is not None:
            p["compiler_params"] = dataclasses.replace(cp, dimension_semantics=("arbitrary",) * len(sem))
        return eqn.primitive.bind(*invals, **p)
    return bind
