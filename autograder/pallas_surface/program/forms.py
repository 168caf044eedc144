"""Equations JAX records in a form a document cannot hold, in the form it keeps
(run by the tracer, inside ``serial``).

- A high-level primitive (0.12's ``call_hi_primitive``: jnp.frexp, ldexp,
  searchsorted, tril_indices_from...) holds an object whose methods compute it:
  the document keeps the low-level program JAX lowers it to, as a call.
- ``custom_linear_solve`` (jnp.linalg.solve) holds four programs and their
  transposition rules: the document keeps the one it runs, ``solve``, as a call
  (the others are for differentiation, which grading never does).
- ``composite`` (lax.composite) is a named call: the document keeps its body.
- ``device_put`` with no device (jax.device_put(x) in a traced function) is its
  operand: the document keeps an empty call.
- ``check`` (pl.debug_check) holds an error tree with a traceback object: the
  document keeps its message, its flag and its format arguments' structure.
- ``reduce`` (lax.reduce with a computation) holds that computation as a Python
  function too: the document keeps the program of it JAX traced.

What the student's line called is told here too (``called_at``): a refusal
names the student's line and the JAX function they called there.
"""
from __future__ import annotations

import os
from typing import Any

import jax
from jax._src import api_util, core as jax_core, linear_util as lu, source_info_util
from jax._src.interpreters import partial_eval as pe

from . import jaxprs
from .schema import Refused

CALL = "closed_call"    # how the document holds a program run in place (names.INLINED)


def as_call(e: Any) -> tuple[Any, list] | None:
    """(closed program, its operands) an equation runs in place, for the two kinds
    above; None for any other equation."""
    name = e.primitive.name
    if name == "custom_linear_solve":
        return _solve(e)
    if name == "device_put" and not any(e.params.get("devices", ())) and not any(e.params.get("srcs", ())):
        # jax.device_put(x) with no device: the value itself (the grader places every array).
        return _identity([v.aval for v in e.invars]), list(e.invars)
    if name == "composite":     # lax.composite: a named call (its body: call_jaxpr in 0.12, jaxpr in 0.10.2)
        body = next((v for k, v in e.params.items() if k in ("call_jaxpr", "jaxpr")), None)
        if body is None:
            raise Refused("a composite without a body")
        return (body if jaxprs.is_closed(body) else jaxprs.close(body, [])), list(e.invars)
    avals = [v.aval for v in e.invars]
    try:
        high = e.primitive.is_high(*avals, **e.params)
    except Exception:  # noqa: BLE001 - a primitive that cannot say is not a high one
        high = False
    if not high or not all(type(a) is jax_core.ShapedArray for a in avals):
        return None
    return _expanded(e, avals), list(e.invars)


def _expanded(e: Any, avals: list) -> Any:
    prim, params = e.primitive, e.params

    def low(*args):
        out = prim.to_lojax(*args, **params)
        return list(out) if prim.multiple_results else [out]
    debug = api_util.debug_info("pallas-autograder lowering", low, tuple(avals), {})
    try:
        with source_info_util.user_context(e.source_info.traceback):
            jaxpr, _out, consts = pe.trace_to_jaxpr_dynamic(lu.wrap_init(low, debug_info=debug), avals)
    except Exception as x:  # noqa: BLE001 - any failure to lower is a refusal of that primitive
        raise Refused(f"primitive '{prim.name}' could not be lowered ({type(x).__name__})") from None
    if len(jaxpr.outvars) != len(e.outvars):
        raise Refused(f"primitive '{prim.name}' lowers to {len(jaxpr.outvars)} results, not {len(e.outvars)}")
    return jaxprs.close(jaxpr, consts)


def _identity(avals: list) -> Any:
    def same(*args):
        return list(args)
    debug = api_util.debug_info("pallas-autograder identity", same, tuple(avals), {})
    jaxpr, _out, consts = pe.trace_to_jaxpr_dynamic(lu.wrap_init(same, debug_info=debug), avals)
    return jaxprs.close(jaxpr, consts)


def _solve(e: Any) -> tuple[Any, list]:
    lengths, programs = e.params["const_lengths"], e.params["jaxprs"]
    counts = [int(n) for n in lengths]
    if len(counts) != 4 or programs.solve is None:
        raise Refused("a custom_linear_solve without a solve program")
    start = counts[0] + counts[1]
    operands = list(e.invars[start:start + counts[2]]) + list(e.invars[sum(counts):])
    return programs.solve, operands


def check_params(e: Any) -> list:
    """A check's parameters as the document keeps them: debug, the message, and
    the structure of its format arguments (``special.check`` rebuilds it)."""
    from jax._src import checkify
    error = jax.tree_util.tree_unflatten(e.params["err_tree"], list(range(len(e.invars))))
    effects, metadata = list(error._pred), list(error._metadata.values())
    if len(effects) != 1 or len(metadata) != 1 or list(error._pred.values()) != [0] \
            or list(error._code.values()) != [1]:
        raise Refused("a check of more than one error: the grader rebuilds pl.debug_check and checkify.check")
    exc = jax.tree_util.tree_unflatten(metadata[0], error._payload[effects[0]])
    if not isinstance(exc, checkify.FailedCheckError):
        raise Refused(f"a check of {type(exc).__name__}: the grader rebuilds pl.debug_check and checkify.check")
    payload = jax.tree_util.tree_structure((tuple(exc.args), dict(exc.kwargs)))
    if jax.tree_util.tree_leaves((tuple(exc.args), dict(exc.kwargs))) != list(range(2, len(e.invars))):
        raise Refused("a check whose format arguments are not its operands")
    return [["debug", bool(e.params["debug"])], ["message", str(exc.fmt_string)], ["payload", payload]]


def reduce_params(e: Any) -> list:
    return [[k, e.params[k]] for k in ("dimensions", "jaxpr")]


# Frames between the student's line and the function they called (decorators, jit).
_WRAPPERS = frozenset({"reraise_with_filtered_traceback", "cache_miss", "wrapper", "wrapped", "__call__",
                       "call_wrapped", "_fun_wrapper", "vectorized_func", "fun_wrapped"})


def called_at(info: Any, student_files: set[str]) -> tuple[str, int, str] | None:
    """(file, line, function called) of the student's line behind an equation:
    the JAX function the line called, as its name (``roll``), when it can be told."""
    frames = list(getattr(info.traceback, "frames", None) or [])
    for i, fr in enumerate(frames):
        if os.path.realpath(fr.file_name) in student_files:
            called = next((f.function_name for f in reversed(frames[:i]) if "/jax/" in f.file_name
                           and f.function_name not in _WRAPPERS and not f.function_name.startswith("<")), "")
            return os.path.basename(fr.file_name), int(fr.line_num), called.split(".<locals>")[0]
    return None
