"""The only module that touches JAX/Pallas internals (pinned: jax 0.10.2).

Everything that depends on how this JAX release represents a ``pallas_call``
lives here: the rung's ``interpret`` value, the jaxpr re-evaluation that forces
a rung on a student's function without its cooperation, the unwrapping of TPU
interpret-mode errors, and the interpreter's global state. The canary tests in
``tests/test_canaries.py`` fail loudly when the pinned JAX changes any of it.

Imported only in the child process: the grader's own process never imports JAX.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import jax
from jax._src import core as jax_core
from jax.experimental.pallas import tpu as pltpu

PINNED_JAX = "0.10.2"
PALLAS_CALL = "pallas_call"

# Higher-order primitives whose bodies are re-evaluated (inlined or rebuilt) so
# that pallas_calls nested in jit, cond, while/fori_loop and scan are reached.
_INLINE_CLOSED = {"pjit": "jaxpr", "jit": "jaxpr", "closed_call": "call_jaxpr",
                  "core_call": "call_jaxpr", "custom_jvp_call": "call_jaxpr",
                  "custom_vjp_call": "call_jaxpr"}
_INLINE_OPEN = {"remat2": "jaxpr", "checkpoint": "jaxpr"}


class UnsupportedPrimitive(RuntimeError):
    """A higher-order primitive this rewrite does not know holds a pallas_call."""


def interpret_value(rung: str, params: dict[str, Any] | None = None) -> Any:
    """The ``interpret=`` value that selects a rung's interpreter."""
    if rung == "generic":
        return True
    if rung == "tpu-interpret":
        return pltpu.InterpretParams(**(params or {}))
    raise ValueError(f"rung must be 'generic' or 'tpu-interpret' on CPU; got {rung!r}")


@dataclass
class Traced:
    closed: Any                 # jax ClosedJaxpr of the student's whole function
    out_tree: Any               # pytree structure of what the student returned
    pallas_calls: int           # pallas_call equations found, nested ones included


def trace(fn: Callable, args: Sequence[Any], static: Sequence[int] = ()) -> Traced:
    """Trace the student's function (jitted or not) to a jaxpr; runs no kernel."""
    closed, shapes = jax.make_jaxpr(fn, static_argnums=tuple(static), return_shape=True)(*args)
    return Traced(closed, jax.tree.structure(shapes), count_pallas_calls(closed.jaxpr))


def _sub_jaxprs(value: Any):
    if isinstance(value, jax_core.ClosedJaxpr):
        yield value.jaxpr
    elif isinstance(value, jax_core.Jaxpr):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _sub_jaxprs(v)


def count_pallas_calls(jaxpr: Any) -> int:
    n = 0
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == PALLAS_CALL:
            n += 1
        for v in eqn.params.values():
            for sub in _sub_jaxprs(v):
                n += count_pallas_calls(sub)
    return n


def _eval(jaxpr: Any, consts: Sequence[Any], args: Sequence[Any], interpret: Any) -> list:
    env: dict = {}

    def read(v):
        return v.val if isinstance(v, jax_core.Literal) else env[v]

    for v, c in zip(jaxpr.constvars, consts):
        env[v] = c
    for v, a in zip(jaxpr.invars, args):
        env[v] = a
    for eqn in jaxpr.eqns:
        outs = _eval_eqn(eqn, [read(v) for v in eqn.invars], interpret)
        if not eqn.primitive.multiple_results:
            outs = [outs]
        for v, o in zip(eqn.outvars, outs):
            env[v] = o
    return [read(v) for v in jaxpr.outvars]


def _closed_fn(closed: Any, interpret: Any) -> Callable:
    return lambda *a: _eval(closed.jaxpr, closed.consts, a, interpret)


def _eval_eqn(eqn: Any, invals: list, interpret: Any) -> Any:
    """Re-bind one equation, with every pallas_call's interpret replaced.

    Bodies are re-traced rather than patched in place: TPU interpret mode adds
    an ordered IO effect that the original jaxpr never declared, and re-binding
    recomputes effects. Re-tracing also gives each rung fresh jaxprs, so no jit
    cache can serve one rung's executable to another.
    """
    name, p = eqn.primitive.name, eqn.params
    if name == PALLAS_CALL:
        return eqn.primitive.bind(*invals, **{**p, "interpret": interpret})
    if name in _INLINE_CLOSED:
        body = p[_INLINE_CLOSED[name]]
        if isinstance(body, jax_core.ClosedJaxpr):
            return _eval(body.jaxpr, body.consts, invals, interpret)
        return _eval(body, (), invals, interpret)
    if name in _INLINE_OPEN:
        return _eval(p[_INLINE_OPEN[name]], (), invals, interpret)
    if name == "cond":
        index, *ops = invals
        return jax.lax.switch(index, [_closed_fn(b, interpret) for b in p["branches"]], *ops)
    if name == "while":
        cn, bn = p["cond_nconsts"], p["body_nconsts"]
        cconsts, bconsts, init = invals[:cn], invals[cn:cn + bn], invals[cn + bn:]
        cond_f, body_f = _closed_fn(p["cond_jaxpr"], interpret), _closed_fn(p["body_jaxpr"], interpret)
        return jax.lax.while_loop(lambda c: cond_f(*cconsts, *c)[0],
                                  lambda c: body_f(*bconsts, *c), list(init))
    if name == "scan":
        nc, nk = p["num_consts"], p["num_carry"]
        consts, init, xs = invals[:nc], invals[nc:nc + nk], invals[nc + nk:]
        body_f = _closed_fn(p["jaxpr"], interpret)

        def step(carry, x):
            out = body_f(*consts, *carry, *x)
            return out[:nk], out[nk:]

        carry, ys = jax.lax.scan(step, list(init), list(xs), length=p["length"],
                                 reverse=p["reverse"], unroll=p["unroll"])
        return [*carry, *ys]
    if any(count_pallas_calls(sub) for v in p.values() for sub in _sub_jaxprs(v)):
        raise UnsupportedPrimitive(
            f"the grader cannot reach a pallas_call inside '{name}'; call the kernel directly, "
            "or through jit, cond, fori_loop/while_loop or scan")
    return eqn.primitive.bind(*invals, **p)


def run(traced: Traced, array_args: Sequence[Any], rung: str,
        params: dict[str, Any] | None = None) -> Any:
    """Run the traced function with every pallas_call on ``rung``'s interpreter.

    A fresh ``jax.jit`` of a fresh closure per call: nothing is shared between
    rungs through the jit cache.
    """
    interpret = interpret_value(rung, params)
    closed = traced.closed
    fn = jax.jit(lambda *a: _eval(closed.jaxpr, closed.consts, a, interpret))
    flat = fn(*array_args)
    flat = [jax.block_until_ready(x) for x in flat]
    return jax.tree.unflatten(traced.out_tree, flat)


# TPU interpret mode raises inside a host callback; XLA wraps it as
# "JaxRuntimeError: INTERNAL: CpuCallback error ..." with the real exception's
# last traceback line buried in the text.
_WRAPPED = re.compile(r"CpuCallback error")
_BURIED = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception)): (?P<msg>.*)$", re.M)


def unwrap_error(exc: BaseException) -> tuple[str, str]:
    """(exception type, message) of the real error behind a wrapped callback error."""
    text = str(exc)
    if _WRAPPED.search(text):
        found = list(_BURIED.finditer(text))
        if found:
            last = found[-1]
            return last.group("type").rsplit(".", 1)[-1], last.group("msg").strip()
    return type(exc).__name__, text


def reset_state() -> None:
    """TPU interpret mode keeps simulated memory after an exception, on purpose."""
    pltpu.reset_tpu_interpret_mode_state()


def jax_version() -> str:
    return jax.__version__
