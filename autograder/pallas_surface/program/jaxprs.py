"""A jaxpr's two shapes across the supported JAX releases.

In 0.10.2 a program with its constants is a ``ClosedJaxpr`` around an open
``Jaxpr``; from 0.11 on ``ClosedJaxpr`` is merged into ``Jaxpr`` (an alias in
0.11, gone in 0.12), which carries its constants itself and answers ``.jaxpr``
with itself. A run_scoped body's closed-over refs are constvars bound by its
equation's inputs in both: 0.10.2 keeps them as the open jaxpr's constvars,
0.12 attaches the equation's inputs (tracers while tracing) as its consts.
Every other module asks here, never ``isinstance(x, ClosedJaxpr)``; and
``sub_jaxprs`` is the one walker of the jaxprs an equation's parameters hold.
"""
from __future__ import annotations

from typing import Any, Sequence

from jax._src import core as jax_core

from .. import release

_CLOSED = getattr(jax_core, "ClosedJaxpr", None) if not release.UNIFIED_JAXPR else None


def _bound_by_inputs(x: Any) -> bool:
    return any(isinstance(c, jax_core.Tracer) for c in x.consts)


def is_closed(x: Any) -> bool:
    """A jaxpr with its constants (0.10.2's ClosedJaxpr)."""
    if _CLOSED is not None:
        return isinstance(x, _CLOSED)
    return isinstance(x, jax_core.Jaxpr) and not _bound_by_inputs(x)


def is_open(x: Any) -> bool:
    """A jaxpr whose constvars (if any) its equation's inputs bind."""
    if _CLOSED is not None:
        return isinstance(x, jax_core.Jaxpr)
    return isinstance(x, jax_core.Jaxpr) and _bound_by_inputs(x)


def close(jaxpr: Any, consts: Sequence[Any]) -> Any:
    """The closed form of ``jaxpr`` with ``consts`` for its constvars."""
    return (_CLOSED or jax_core.Jaxpr)(jaxpr, list(consts))


def open_of(x: Any) -> Any:
    """The equations' jaxpr of a closed one (itself from 0.11 on)."""
    return x.jaxpr if is_closed(x) else x


def consts_of(x: Any) -> list:
    return list(x.consts) if is_closed(x) else []


def bind_constvars(jaxpr: Any, n: int, inputs: Sequence[Any]) -> Any:
    """``jaxpr`` traced over constvars and invars alike, with its first ``n``
    invars made constvars again, bound by the equation's first ``n`` inputs."""
    if _CLOSED is not None:
        from jax._src.interpreters import partial_eval as pe
        return pe.convert_invars_to_constvars(jaxpr, n)
    return jaxpr.with_consts(list(inputs[:n]))


def sub_jaxprs(value: Any):
    """The open jaxprs held by one equation parameter (bodies, branches; in tuples
    and lists too): a closed one's equations, an open one itself."""
    if is_closed(value):
        yield value.jaxpr
    elif is_open(value):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from sub_jaxprs(v)


def kernel_primitives(closed: Any) -> tuple[str, ...]:
    """The names of the operations inside a program's kernels (its pallas_calls' bodies)."""
    found: set[str] = set()

    def walk(jaxpr: Any, inside: bool) -> None:
        for eqn in jaxpr.eqns:
            name = eqn.primitive.name
            if inside:
                found.add(name)
            for v in eqn.params.values():
                for sub in sub_jaxprs(v):
                    walk(sub, inside or name in release.KERNEL_CALLS)
    walk(closed.jaxpr, False)
    return tuple(sorted(found))
