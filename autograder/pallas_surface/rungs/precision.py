"""A TPU's default precision for float32 matrix products inside kernels.

Pallas lowers a kernel's ``dot_general`` at precision None or DEFAULT to
Mosaic's ``tpu.matmul`` with no precision attribute, and the TPU then rounds
32-bit operands to bfloat16 (accumulating in float32); HIGHEST asks for
float32 (``release.DEFAULT_DOT_ROUNDS_TO`` has the sources). The interpreters
multiply in float32, so a kernel whose answer depends on those bits agrees
with them and not with the chip. ``bf16_dots`` counts such products in a
traced program; ``rounded_kernels`` is a pallas_call stub that rounds their
float32 operands to bfloat16 first, which is what the TPU stage's CPU stand-in
does so that it computes what a TPU would.
"""
from __future__ import annotations

from typing import Any, Callable

import jax.numpy as jnp
from jax import lax
from jax._src import core as jax_core

from .. import release
from ..program import jaxprs

DOT = "dot_general"


def _rounds(eqn: Any) -> bool:
    """Does the TPU round this product's float32 operands to bfloat16?"""
    if eqn.primitive.name != DOT:
        return False
    precision = eqn.params.get("precision")
    if isinstance(precision, tuple):
        precision = precision[0]
    default = precision is None or precision == lax.Precision.DEFAULT
    return default and any(getattr(v.aval, "dtype", None) == jnp.float32 for v in eqn.invars)


def _count(jaxpr: Any, in_kernel: bool) -> int:
    n = 0
    for eqn in jaxpr.eqns:
        inside = in_kernel or eqn.primitive.name == release.PALLAS_CALL
        n += int(in_kernel and _rounds(eqn))
        for v in eqn.params.values():
            for sub in jaxprs.sub_jaxprs(v):
                n += _count(sub, inside)
    return n


def bf16_dots(closed: Any) -> int:
    """Float32 products at default precision inside the kernels of a closed jaxpr."""
    return _count(closed.jaxpr, False)


def _to_bf16(v: Any, eqns: list, source_info: Any) -> Any:
    """Equations that round ``v`` to bfloat16 and back; the rounded variable."""
    convert = lax.convert_element_type_p
    narrow = jax_core.Var(v.aval.update(dtype=jnp.dtype(jnp.bfloat16), weak_type=False))
    wide = jax_core.Var(v.aval.update(dtype=jnp.dtype(jnp.float32), weak_type=False))
    for src, dst, dtype in ((v, narrow, jnp.bfloat16), (narrow, wide, jnp.float32)):
        eqns.append(jax_core.new_jaxpr_eqn([src], [dst], convert,
                                           {"new_dtype": jnp.dtype(dtype), "weak_type": False, "sharding": None},
                                           jax_core.no_effects, source_info))
    return wide


def _map(value: Any) -> Any:
    if jaxprs.is_closed(value):
        return jaxprs.close(round_dots(value.jaxpr), value.consts)
    if jaxprs.is_open(value):
        return round_dots(value)
    if isinstance(value, tuple):
        return tuple(_map(v) for v in value)
    return value


def round_dots(jaxpr: Any) -> Any:
    """``jaxpr`` with every float32 operand of a default-precision product
    rounded to bfloat16 first (nested bodies too)."""
    eqns: list = []
    for eqn in jaxpr.eqns:
        eqn = eqn.replace(params={k: _map(v) for k, v in eqn.params.items()})
        if _rounds(eqn):
            invars = [_to_bf16(v, eqns, eqn.source_info) if v.aval.dtype == jnp.float32 else v
                      for v in eqn.invars]
            eqn = eqn.replace(invars=invars)
        eqns.append(eqn)
    return jaxpr.replace(eqns=eqns)


def rounded_kernels(interpret: Any) -> Callable:
    """A pallas_call stub: the kernel on ``interpret`` with its products rounded as a TPU rounds them."""
    def bind(eqn: Any, invals: list) -> Any:
        params = {**eqn.params, "interpret": interpret, "jaxpr": round_dots(eqn.params["jaxpr"])}
        return eqn.primitive.bind(*invals, **params)
    return bind
