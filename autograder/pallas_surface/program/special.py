"""Rebinding one equation of a decoded program: the generic rule's conditions, and
the primitives rebuilt by a rule of their own (``names.SPECIAL``).

The generic rule binds any primitive of JAX's array modules by its name, on two
conditions checked here: its parameters are data (the decoder makes no callable,
and no sub-program or tree may reach a generic primitive), and binding it
declares no effect (a primitive that orders, prints, reads or writes state is
one ``names.EFFECTFUL`` names after review, or is refused).
"""
from __future__ import annotations

import dataclasses
import string
from typing import Any

import numpy as np
from jax._src import core as jax_core
from jax.tree_util import PyTreeDef

from . import registry
from .decode import Leaf, SubProgram
from .schema import Refused


def _data(value: Any, depth: int = 0) -> bool:
    """A parameter the generic rule takes: numbers, strings, dtypes, avals, named
    values, arrays, and tuples, lists, dicts and registered classes of them."""
    if depth > 32 or isinstance(value, (SubProgram, Leaf, PyTreeDef)):
        return False
    if registry.named_key(value) is not None:
        return True
    if callable(value) and not isinstance(value, type):
        return False
    if isinstance(value, (tuple, list)):
        return all(_data(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(_data(k, depth + 1) and _data(v, depth + 1) for k, v in value.items())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return all(_data(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value))
    return value is None or isinstance(value, (bool, int, float, complex, str, np.generic, np.ndarray, np.dtype,
                                               jax_core.AbstractValue)) \
        or any(value is d for d in registry.DTYPES.values())


def generic(name: str, prim: jax_core.Primitive, invals: list, params: dict) -> None:
    """Refuses what the generic rule may not bind: a parameter that is not data, or
    a primitive whose binding declares an effect."""
    for key, value in params.items():
        if not _data(value):
            raise Refused(f"parameter '{key}' of '{name}' is not data: the grader rebinds '{name}' by name only "
                          "with numbers, shapes, dtypes and the like")
    _out, effects = prim.abstract_eval(*[jax_core.typeof(x) for x in invals], **params)
    if effects:
        raise Refused(f"primitive '{name}' has effects ({', '.join(sorted(map(str, effects)))[:200]}): "
                      "the grader rebinds by name only primitives without")


def check(invals: list, params: dict, source: list | None) -> list:
    """pl.debug_check / checkify.check: the student's message over the predicate
    the document computes (the first operand, already negated: true means the
    check failed), with the format arguments after the error code (which says
    which of several errors fired: one here, so code 0). The message is the
    student's, with their line after it (``release.CHECK_FAILED`` reads both back)."""
    from jax._src import checkify
    from jax._src.tree_util import tree_flatten, tree_unflatten
    message, debug, payload = params.get("message"), params.get("debug"), params.get("payload")
    if not (isinstance(message, str) and isinstance(debug, bool) and isinstance(payload, PyTreeDef)
            and len(invals) == 2 + payload.num_leaves):
        raise Refused("a malformed check: the grader rebuilds a message, a flag and format arguments")
    failed, _code, *values = invals
    args, kwargs = tree_unflatten(payload, values)
    if not (isinstance(args, tuple) and isinstance(kwargs, dict) and all(isinstance(k, str) for k in kwargs)):
        raise Refused("a malformed check: its format arguments must be positional and named")
    where = f"{source[0]}:{source[1]}" if source else "a line outside your files"
    text = f"{plain_format(message)} (at {where.replace('{', '{{').replace('}', '}}')})"
    error = checkify.FailedCheckError(checkify.get_traceback(), text, *args, **kwargs)
    leaves, metadata = tree_flatten(error)
    effect = error.get_effect_type()
    checkify._check_error(checkify.Error({effect: failed}, {effect: np.int32(0)}, {0: metadata}, {effect: leaves}),
                          debug=debug)
    return []


def plain_format(message: str) -> str:
    """A check's message (or a print's format) as it formats its arguments: "{}",
    "{0}", "{name}" with a format spec. Any other field ("{0.__class__}" would reach
    the grader's objects from the student's words; "{0, 1}" would fail) leaves the
    message as its text."""
    try:
        fields = list(string.Formatter().parse(message))
    except ValueError:
        fields = [("", "(", "", None)]
    plain = all(field is None or field == "" or (field.isdigit() or field.isidentifier())
                and "{" not in (spec or "") for _t, field, spec, _c in fields)
    return message if plain else message.replace("{", "{{").replace("}", "}}")


def reduce(program, prim: jax_core.Primitive, invals: list, params: dict) -> list:
    """lax.reduce with a computation of the student's: the computation is the
    sub-program the document holds, rebuilt and run as a function."""
    body, dims = params.get("jaxpr"), params.get("dimensions")
    if not (isinstance(body, SubProgram) and body.closed and isinstance(dims, tuple)
            and all(isinstance(d, int) and not isinstance(d, bool) for d in dims)):
        raise Refused("a malformed reduce: the grader rebuilds a computation and the dimensions it reduces")
    closed = body.closed_jaxpr(program)
    computation = jax_core.jaxpr_as_fun(closed)
    return prim.bind(*invals, computation=computation, jaxpr=closed, dimensions=dims)


def empty(params: dict) -> list:
    """jnp.empty / lax.empty: zeros of its shape and dtype, what XLA:CPU lowers it to,
    whatever the platform (a TPU's lowering hands out a buffer never written)."""
    import jax
    shape, dtype = params.get("shape"), params.get("dtype")
    if not (isinstance(shape, tuple) and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                              for d in shape) and isinstance(dtype, np.dtype)):
        raise Refused("a malformed empty: the grader rebuilds a shape and a dtype")
    return [jax.lax.full(shape, 0, dtype)]
