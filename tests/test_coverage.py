"""Every primitive a public JAX call emits is one the grader rebuilds, and classifies
outside a kernel, on this release (issue 44 §1).

Every public function of jax.numpy (its linalg and fft), jax.nn, jax.lax and
jax.random (tests/coverage_calls.py) is traced on small arrays, outside a kernel
and inside one, as a student's function would be: serialized, checked by the
parent's grammar, rebuilt by the child's rules and traced again. Outside a
kernel every primitive of the rebuilt program must be classified (a move of
data, or work: ``program.names``); for each primitive seen first in a call,
the original and the rebuilt program run and must give the same bits. A new
JAX release's primitive then fails here, not as a student's zero.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = [pytest.mark.jax, pytest.mark.releases]

HERE = str(Path(__file__).resolve())
# Calls Pallas will not take in a kernel body as coverage_calls writes them, and why
# (the test checks the list stays these). Their primitives are covered outside a kernel.
_CONSTANT = ("its call captures an array constant (an index table, polynomial coefficients): Pallas refuses "
             "constants in a kernel body; a kernel takes them as operands")
NOT_IN_A_KERNEL = {n: _CONSTANT for n in (
    "jax.random.binomial", "jax.random.multinomial", "jnp.place", "jnp.put", "lax.gather", "lax.index_take",
    "lax.polynomial", "lax.ragged_dot", "lax.ragged_dot_general", "lax.scatter", "lax.scatter_add",
    "lax.scatter_apply", "lax.scatter_max", "lax.scatter_min", "lax.scatter_mul", "lax.scatter_sub")}
# Run in a kernel on the generic interpreter, both programs (every other call's rebuilt kernel
# is compared equation by equation: the interpreter's compile of special functions takes seconds).
RUN_IN_A_KERNEL = ("jnp.stack", "jnp.tile", "jnp.roll", "jnp.log2", "jnp.exp2", "jax.nn.gelu", "jnp.unstack",
                   "jnp.sinc", "jnp.frexp", "jax.random.uniform", "lax.reduce", "jnp.linalg.solve",
                   "lax.custom_root", "jnp.where", "lax.fori_loop")


def _flat(fn):
    import jax
    return lambda *a: [jax.random.key_data(v) if _is_key(v) else v for v in jax.tree.leaves(fn(*a))]


def _is_key(v) -> bool:
    import jax
    return hasattr(v, "dtype") and jax.dtypes.issubdtype(v.dtype, jax.dtypes.prng_key)


def _round_trip(fn, args):
    """(the student's trace, the rebuilt program's trace) of ``fn`` on ``args``."""
    from autograder.pallas_surface.program import rebuild, schema, serial
    from autograder.pallas_surface.rungs import rung
    traced = rung.trace(fn, args)
    doc = schema.loads(json.dumps(serial.encode(traced, {HERE})).encode())
    return traced, rung.trace(rebuild.load(doc).function(), args)


def _outside_primitives(jaxpr, out: set) -> set:
    """The primitives of a program outside its kernels (sub-programs walked into)."""
    from autograder.pallas_surface import release
    from autograder.pallas_surface.rungs import rung
    for eqn in jaxpr.eqns:
        out.add(eqn.primitive.name)
        if eqn.primitive.name not in release.KERNEL_CALLS:
            for sub in rung.eqn_subprograms(eqn):
                _outside_primitives(sub, out)
    return out


def _all_primitives(jaxpr, out: set) -> set:
    from autograder.pallas_surface.rungs import rung
    for eqn in jaxpr.eqns:
        out.add(eqn.primitive.name)
        for sub in rung.eqn_subprograms(eqn):
            _all_primitives(sub, out)
    return out


def _equations(jaxpr, constant: frozenset = frozenset()) -> list:
    """A program as its equations, calls and the forms the document keeps (jit,
    composite, a high-level primitive, a linear solve) replaced by their bodies:
    each primitive with its parameters, sub-programs as theirs, in order. What
    tracing folds or forwards is left out on both sides: a constant's conversion
    (JAX folds it when it rebinds a literal) and a conversion or broadcast to the
    same type (JAX forwards its operand)."""
    from jax._src import core as jax_core
    from jax._src.interpreters import partial_eval as pe

    from autograder.pallas_surface.program import forms, jaxprs, names
    fixed = set(constant)
    is_fixed = lambda a: isinstance(a, jax_core.Literal) or a in fixed  # noqa: E731
    out = []
    for eqn in jaxpr.eqns:
        call = forms.as_call(eqn)
        body = call[0] if call is not None else eqn.params.get(names.INLINED.get(eqn.primitive.name, ""))
        if body is not None:
            inner = jaxprs.open_of(body)
            operands = call[1] if call is not None else eqn.invars
            out += _equations(inner, frozenset([*inner.constvars, *(v for v, a in zip(inner.invars, operands)
                                                                     if is_fixed(a))]))
            continue
        if eqn.primitive.name == "platform_index" or eqn.primitive.name == "empty" or \
                eqn.primitive.name == "broadcast_in_dim" and all(map(is_fixed, eqn.invars)):
            # A platform index is resolved to the TPU's branch (rebuild._platform), and empty
            # rebuilt as zeros (special.empty): constants either way.
            fixed.update(eqn.outvars)
            continue
        ins, outs = [v.aval for v in eqn.invars], [v.aval for v in eqn.outvars]
        if eqn.primitive in pe.const_fold_rules and all(map(is_fixed, eqn.invars)):
            fixed.update(eqn.outvars)
            continue
        if eqn.primitive.name in ("convert_element_type", "broadcast_in_dim") and _same(ins[:1], outs):
            if all(map(is_fixed, eqn.invars)):
                fixed.update(eqn.outvars)
            continue
        params = {}
        for k, v in sorted(eqn.params.items()):
            if k in _UNCOMPARED:
                continue
            subs = [_equations(jaxprs.open_of(x)) for x in (v if isinstance(v, (tuple, list)) else [v])
                    if jaxprs.is_closed(x) or jaxprs.is_open(x)]
            params[k] = subs or repr(_dtype_of(v))
        out.append((eqn.primitive.name, params))
    return out


# Parameters a rebuild remakes rather than copies: a check's error tree (its traceback
# object), reduce's Python computation (remade from its program), a scan's flat trees
# (rebuilt as leaf counts) and a platform cond's platforms (resolved to the TPU's branch).
_UNCOMPARED = ("err_tree", "computation", "ft_in", "ft_out", "branches_platforms")


def _dtype_of(v):
    """A scalar type (jnp.float32) as the dtype it stands for, as the document keeps it."""
    import numpy as np
    return np.dtype(v.dtype) if isinstance(v, type) and isinstance(getattr(v, "dtype", None), np.dtype) else v


def _same(ins: list, outs: list) -> bool:
    """A conversion or broadcast JAX forwards: its operand's type and shape, strong or weak alike."""
    return len(ins) == len(outs) == 1 and getattr(ins[0], "shape", None) == getattr(outs[0], "shape", 1) \
        and getattr(ins[0], "dtype", None) == getattr(outs[0], "dtype", 1)


def _bits(rung_mod, traced, args, which="generic"):
    import numpy as np
    try:
        outs = rung_mod.run(traced, args, which)
    finally:
        rung_mod.reset_state()
    return [np.asarray(o).tobytes() for o in outs]


def _kernel_of(fn, args):
    """``fn`` as the body of a kernel over whole-array blocks (no grid)."""
    import jax
    from jax.experimental import pallas as pl
    outs = jax.eval_shape(fn, *args)

    def kernel(*refs):
        values = fn(*[r[...] for r in refs[:len(args)]])
        for r, v in zip(refs[len(args):], values):
            r[...] = v
    return lambda *a: pl.pallas_call(kernel, out_shape=[jax.ShapeDtypeStruct(o.shape, o.dtype) for o in outs])(*a)


@pytest.fixture(scope="module")
def every_call():
    import coverage_calls
    found, missing = coverage_calls.calls()
    assert not missing, f"public functions no call reaches: add each to coverage_calls.CALLS or NOT_CALLED: {missing}"
    return found, coverage_calls.arrays()


def test_the_calls_reach_every_public_function_and_skip_few(every_call):
    import coverage_calls
    found, _a = every_call
    assert len(found) > 550
    # What is not called says why, and is not what the calls reach.
    assert len(coverage_calls.NOT_CALLED) < 80 and not set(coverage_calls.NOT_CALLED) & set(found)


def _size(jaxpr) -> int:
    from autograder.pallas_surface.rungs import rung
    return sum(1 + sum(_size(sub) for sub in rung.eqn_subprograms(e)) for e in jaxpr.eqns)


def test_every_public_call_outside_a_kernel_rebuilds_bit_for_bit_and_is_classified(every_call):
    """Outside a kernel, every call rebuilds, and every primitive of the rebuilt program
    is classified; for each primitive, the smallest call that emits it runs both
    programs (the interpreters' program outside a kernel: jitted on the CPU), bit for bit."""
    from autograder.pallas_surface.program import names
    from autograder.pallas_surface.rungs import hooks, rung
    hooks.install()
    found, a = every_call
    unclassified, failures, seen = {}, [], {}
    for name, (letters, fn) in sorted(found.items()):
        args = [a[c] for c in letters]
        try:
            traced, rebuilt = _round_trip(_flat(fn), args)
        except Exception as e:  # noqa: BLE001 - every call must rebuild: collected, then shown
            failures.append(f"{name}: {type(e).__name__}: {str(e)[:300]}")
            continue
        size = _size(rebuilt.closed.jaxpr)
        for p in _outside_primitives(rebuilt.closed.jaxpr, set()):
            if names.outside_kind(p) is None:
                unclassified.setdefault(p, name)
            if p not in seen or size < seen[p][0]:
                seen[p] = (size, name, traced, rebuilt, args)
    assert not failures, "\n".join(failures)
    assert not unclassified, f"primitives no rule classifies outside a kernel (names.py): {unclassified}"
    runs = {entry[1]: entry[2:] for entry in seen.values()}
    for name, (traced, rebuilt, args) in sorted(runs.items()):
        assert _bits(rung, rebuilt, args) == _bits(rung, traced, args), f"{name}: the rebuilt program differs"
    assert len(runs) > 100


def _kernel_equations(traced) -> list:
    from autograder.pallas_surface import release
    from autograder.pallas_surface.program import jaxprs
    return [_equations(jaxprs.open_of(e.params["jaxpr"])) for e in traced.closed.jaxpr.eqns
            if e.primitive.name == release.PALLAS_CALL]


def _complex(jaxpr) -> bool:
    """A program with a complex value anywhere (Pallas's interpreter and Mosaic have no complex type)."""
    import numpy as np

    from autograder.pallas_surface.rungs import rung
    return any(np.dtype(getattr(v.aval, "dtype", np.float32)).kind == "c" if hasattr(v.aval, "dtype")
               and isinstance(v.aval.dtype, np.dtype) else False
               for e in jaxpr.eqns for v in e.outvars) or \
        any(_complex(s) for e in jaxpr.eqns for s in rung.eqn_subprograms(e))


def test_every_public_call_inside_a_kernel_rebuilds_as_it_was_traced(every_call):
    """In a kernel body, every call's rebuilt kernel is the traced one, equation by equation
    (parameters and sub-programs alike); a sample runs on the generic interpreter, bit for bit."""
    from autograder.pallas_surface.rungs import hooks, rung
    hooks.install()
    found, a = every_call
    refused, failures, ran = set(), [], []
    for name, (letters, fn) in sorted(found.items()):
        args = [a[c] for c in letters]
        kernel = _kernel_of(_flat(fn), args)
        try:
            rung.trace(kernel, args)
        except ValueError as e:
            assert "captures" in str(e) or "constant" in str(e), (name, str(e)[:300])
            refused.add(name)
            continue
        try:
            traced, rebuilt = _round_trip(kernel, args)
        except Exception as e:  # noqa: BLE001 - every call must rebuild: collected, then shown
            failures.append(f"{name}: {type(e).__name__}: {str(e)[:300]}")
            continue
        if _kernel_equations(rebuilt) != _kernel_equations(traced):
            failures.append(f"{name}: the rebuilt kernel's equations differ")
        elif name in RUN_IN_A_KERNEL and not _complex(traced.closed.jaxpr):
            assert _bits(rung, rebuilt, args) == _bits(rung, traced, args), f"{name}: the rebuilt kernel differs"
            ran.append(name)
    assert not failures, "\n".join(failures)
    unexplained = refused - set(NOT_IN_A_KERNEL)
    assert not unexplained, f"calls Pallas refuses in a kernel, unexplained (NOT_IN_A_KERNEL): {unexplained}"
    assert len(ran) == len([n for n in RUN_IN_A_KERNEL if n in found])


def _seeded(v):
    from jax.experimental.pallas import tpu as pltpu
    pltpu.prng_seed(7)
    return pltpu.bitcast(pltpu.prng_random_bits(v.shape), v.dtype) * 0 + v


def _pallas_bodies() -> dict:
    """Pallas's own operations in a kernel body (the issue's in-kernel calls)."""
    import jax.numpy as jnp
    from jax.experimental import checkify, pallas as pl
    from jax.experimental.pallas import tpu as pltpu
    return {
        "pl.debug_check": lambda v: (pl.debug_check(jnp.all(v < 2.0), "in range"), v)[1],
        "checkify.debug_check": lambda v: (checkify.debug_check(jnp.all(v < 2.0), "{} in range", v[0, 0]), v)[1],
        "pl.debug_print": lambda v: (pl.debug_print("v {}", v[0, 0]), v)[1],
        "pltpu.roll": lambda v: pltpu.roll(v, 3, 1),
        "pltpu.bitcast": lambda v: pltpu.bitcast(v, jnp.int32).astype(jnp.float32),
        "pl.multiple_of": lambda v: v * pl.multiple_of(pl.program_id(0) * 8, 8).astype(jnp.float32),
        "pl.program_id": lambda v: v + jnp.asarray(pl.program_id(0) + pl.num_programs(0), jnp.float32),
        "pltpu.prng_seed": _seeded,            # TPU interpret mode only: the generic one has no CPU rule
        "jnp.log2": jnp.log2, "jax.nn.gelu": __import__("jax").nn.gelu,
    }


def test_pallas_operations_in_a_kernel_rebuild_bit_for_bit():
    import jax
    import numpy as np
    from jax.experimental import pallas as pl

    from autograder.pallas_surface.rungs import hooks, rung
    hooks.install()
    x = np.linspace(-1, 1, 16 * 128, dtype=np.float32).reshape(16, 128)
    spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
    for name, body in _pallas_bodies().items():
        def kernel(x_ref, o_ref, body=body):
            o_ref[...] = body(x_ref[...])
        fn = lambda a, kernel=kernel: pl.pallas_call(  # noqa: E731
            kernel, out_shape=jax.ShapeDtypeStruct(a.shape, a.dtype), grid=(2,), in_specs=[spec], out_specs=spec)(a)
        traced, rebuilt = _round_trip(fn, [x])
        ran = 0
        for which in ("generic", "tpu-interpret"):
            if name == "pltpu.prng_seed" and which == "generic":
                continue
            assert _bits(rung, rebuilt, [x], which) == _bits(rung, traced, [x], which), (name, which)
            ran += 1
        assert ran, name
