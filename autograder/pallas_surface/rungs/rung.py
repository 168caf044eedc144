"""Forcing a rung on a student's function, running it, and reading its errors.

The student's function is traced once per input signature with
``jax.make_jaxpr``; a run re-evaluates that jaxpr equation by equation with
every ``pallas_call``'s ``interpret`` replaced, re-tracing the bodies of jit,
cond, while and scan so nested kernels are reached and TPU interpret mode's IO
effects are recomputed. Runs of one traced function on the same rung with the
same interpreter parameters share one compiled executable (``Executables``);
nothing is shared between rungs or parameters.
"""
from __future__ import annotations

import contextvars
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import jax
from jax._src import core as jax_core
from jax.experimental.pallas import tpu as pltpu

from .. import release
from ..program import jaxprs
from . import rewrites

PALLAS_CALL = release.PALLAS_CALL


def _cond_primitive():
    from jax._src.lax.control_flow.conditionals import cond_p
    return cond_p


_COND = _cond_primitive()


class UnsupportedPrimitive(RuntimeError):
    """A higher-order primitive this rewrite does not know holds a pallas_call."""


def interpret_value(rung: str, params: dict[str, Any] | None = None) -> Any:
    """The ``interpret=`` value that selects a rung's interpreter (False: no
    interpreter, for lowering to the TPU)."""
    if rung == "generic":
        return True
    if rung == "tpu-interpret":
        return pltpu.InterpretParams(**(params or {}))
    if rung == "tpu":
        return False
    raise ValueError(f"rung must be 'generic', 'tpu-interpret' or 'tpu'; got {rung!r}")


@dataclass
class Traced:
    closed: Any                 # closed jaxpr (jaxprs.is_closed) of the student's whole function
    out_tree: Any               # pytree structure of what the student returned
    pallas_calls: int           # pallas_call equations found, nested ones included


def tpu_target():
    """A context in which tracing and lowering see a TPU device kind (jax 0.10.2:
    ``jax.sharding.use_abstract_mesh`` with an ``AbstractDevice``)."""
    from jax.sharding import AbstractDevice, AbstractMesh, AxisType, use_abstract_mesh
    device = AbstractDevice(device_kind=release.TARGET_DEVICE_KIND, num_cores=1, platform="tpu")
    # Auto, as 0.10.2's default: 0.12's default (Explicit) makes jax.numpy record an
    # explicit sharding on what it traces, which the interpreters then refuse to mix.
    return use_abstract_mesh(AbstractMesh((1,), ("grader",), axis_types=(AxisType.Auto,), abstract_device=device))


def trace(fn: Callable, args: Sequence[Any], static: Sequence[int] = ()) -> Traced:
    """Trace the student's function (jitted or not) to a jaxpr; runs no kernel.
    Code that asks for the chip while tracing (the tiling ``pltpu.emit_pipeline``
    reads) is traced again as for a TPU, and gets one, as it would on a TPU; the
    program then runs on the interpreters like any other. Only then: under the
    abstract mesh, jax.numpy also records shardings in its equations."""
    make = jax.make_jaxpr(fn, static_argnums=tuple(static), return_shape=True)
    try:
        closed, shapes = make(*args)
    except ValueError as e:
        if release.NO_TPU_DEVICE not in str(e):
            raise
        with tpu_target():
            closed, shapes = make(*args)
    return Traced(closed, jax.tree.structure(shapes), count_pallas_calls(closed.jaxpr))


def trace_for_tpu(fn: Callable, args: Sequence[Any], static: Sequence[int] = ()) -> Traced:
    """``fn`` traced under the TPU target: what the compile check lowers. The
    jit equations a trace records carry the mesh they were traced under, and
    Pallas's TPU lowering reads the chip from it (integer division and
    remainder, e.g. ``//`` and ``%`` in an index map): traced on CPU, they would
    be refused as "Unsupported TPU device kind: cpu", which is no compiler rule."""
    with tpu_target():
        return trace(fn, args, static)


def eqn_subprograms(eqn: Any):
    """The sub-programs an equation runs: every body and branch, except that of a
    lax.platform_dependent only the branch a TPU runs counts (see ``tpu_branch``)."""
    platforms = eqn.params.get(release.BRANCHES_PLATFORMS) if eqn.primitive.name == "cond" else None
    if platforms is not None:
        yield eqn.params["branches"][tpu_branch(platforms)].jaxpr
        return
    for v in eqn.params.values():
        yield from jaxprs.sub_jaxprs(v)


def count_pallas_calls(jaxpr: Any) -> int:
    n = 0
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in release.KERNEL_CALLS:
            n += 1
        for sub in eqn_subprograms(eqn):
            n += count_pallas_calls(sub)
    return n


# Cross-lowered for a TPU on a machine without one, a jax.debug.print outside a kernel
# is a host callback for the CPU backend that refuses the TPU platform ("the platform
# for the specified backend cpu is different from the lowering platform tpu"): no rule
# of the TPU compiler (a TPU runs it) and no part of the kernel the compile check
# judges. While this is False, evaluate() leaves those prints out.
_HOST_PRINTS = contextvars.ContextVar("pallas_autograder_host_prints", default=True)


@contextmanager
def without_host_prints():
    token = _HOST_PRINTS.set(False)
    try:
        yield
    finally:
        _HOST_PRINTS.reset(token)


def evaluate(jaxpr: Any, consts: Sequence[Any], args: Sequence[Any], interpret: Any,
             stub: Callable | None = None) -> list:
    """Evaluate a jaxpr with every pallas_call on ``interpret`` (or, with
    ``stub``, replaced by ``stub(eqn, invals)``)."""
    env: dict = {}

    def read(v):
        return v.val if isinstance(v, jax_core.Literal) else env[v]

    for v, c in zip(jaxpr.constvars, consts):
        env[v] = c
    for v, a in zip(jaxpr.invars, args):
        env[v] = a
    for eqn in jaxpr.eqns:
        outs = _eval_eqn(eqn, [read(v) for v in eqn.invars], interpret, stub)
        if not eqn.primitive.multiple_results:
            outs = [outs]
        for v, o in zip(eqn.outvars, outs):
            env[v] = o
    return [read(v) for v in jaxpr.outvars]


def _closed_fn(closed: Any, interpret: Any, stub: Callable | None) -> Callable:
    return lambda *a: evaluate(closed.jaxpr, closed.consts, a, interpret, stub)


def _retraced(closed: Any, interpret: Any, stub: Callable | None) -> Any:
    """A closed jaxpr re-traced with its pallas_calls rewritten (effects recomputed)."""
    avals = [v.aval for v in closed.jaxpr.invars]
    args = [jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in avals]
    return jax.make_jaxpr(_closed_fn(closed, interpret, stub))(*args)


def tpu_branch(platforms: Any) -> int:
    """The branch of a lax.platform_dependent a TPU runs: the one naming "tpu",
    else the default (``None``); a program with neither cannot run on a TPU."""
    for i, names in enumerate(platforms):
        if names is not None and "tpu" in names:
            return i
    for i, names in enumerate(platforms):
        if names is None:
            return i
    raise UnsupportedPrimitive("lax.platform_dependent has no branch for a TPU (and no default): the kernel "
                               "cannot run on the chip the course grades for")


def scan_counts(p: dict) -> tuple[int, int]:
    """A scan equation's (constants, carries): 0.10.2 names them (num_consts,
    num_carry); 0.12 packs its inputs' tree as ft_in = (consts, carry, xs)."""
    if release.SCAN_COUNTS_NAMED:
        return p["num_consts"], p["num_carry"]
    consts, carry, _xs = p["ft_in"].unpack()
    return len(consts), len(carry)


def _eval_loop(name: str, p: dict, invals: list, interpret: Any, stub: Callable | None) -> Any:
    """cond, while and scan rebuilt around re-evaluated bodies."""
    if name == "cond" and p.get(release.BRANCHES_PLATFORMS) is not None:
        # lax.platform_dependent: the TPU's branch alone, on every rung (the
        # interpreters run on a CPU and would pick the CPU's).
        branch = p["branches"][tpu_branch(p[release.BRANCHES_PLATFORMS])]
        return evaluate(branch.jaxpr, branch.consts, invals[1:], interpret, stub)
    if name == "cond":
        # Rebound with retraced branches and every other parameter kept: lax.switch
        # would drop branches_platforms (lax.platform_dependent), and the TPU
        # lowering would then lower the CPU-only branch too.
        branches = tuple(_retraced(b, interpret, stub) for b in p["branches"])
        return jax_core.Primitive.bind(_COND, *invals, **{**p, "branches": branches})
    if name == "while":
        cn, bn = p["cond_nconsts"], p["body_nconsts"]
        cconsts, bconsts, init = invals[:cn], invals[cn:cn + bn], invals[cn + bn:]
        cond_f = _closed_fn(p["cond_jaxpr"], interpret, stub)
        body_f = _closed_fn(p["body_jaxpr"], interpret, stub)
        return jax.lax.while_loop(lambda c: cond_f(*cconsts, *c)[0],
                                  lambda c: body_f(*bconsts, *c), list(init))
    nc, nk = scan_counts(p)
    consts, init, xs = invals[:nc], invals[nc:nc + nk], invals[nc + nk:]
    body_f = _closed_fn(p["jaxpr"], interpret, stub)

    def step(carry, x):
        out = body_f(*consts, *carry, *x)
        return out[:nk], out[nk:]

    carry, ys = jax.lax.scan(step, list(init), list(xs), length=p["length"],
                             reverse=p["reverse"], unroll=p["unroll"])
    return [*carry, *ys]


def _eval_eqn(eqn: Any, invals: list, interpret: Any, stub: Callable | None = None) -> Any:
    """Re-bind one equation, with every pallas_call's interpret replaced.

    Bodies are re-traced rather than patched in place: TPU interpret mode adds
    an ordered IO effect that the original jaxpr never declared, and re-binding
    recomputes effects. Re-tracing also gives each rung fresh jaxprs, so no jit
    cache can serve one rung's executable to another.
    """
    name, p = eqn.primitive.name, eqn.params
    if name == release.HOST_PRINT and not _HOST_PRINTS.get():
        return []
    if name == release.PLATFORM_INDEX:
        return jax.numpy.int32(tpu_branch(p["platforms"]))
    if name == release.MPMD_MAP:
        # pl.kernel's equation as the student traced it (the rebuilt program has
        # the pallas_call JAX lowers it to): its interpret replaced, as a pallas_call's.
        if interpret is True:
            p = {**p, "jaxprs": tuple(rewrites.cores_as_grid(j, m) for j, m in zip(p["jaxprs"], p["meshes"]))}
        return eqn.primitive.bind(*invals, **{**p, "interpret": interpret})
    if name == PALLAS_CALL:
        if interpret is True and p.get("mesh") is not None:
            p = {**p, "jaxpr": rewrites.cores_as_grid(p["jaxpr"], p["mesh"])}
        if interpret not in (True, False) and rewrites.aliases_partial_blocks(p):
            p = {**p, "input_output_aliases": ()}
        if isinstance(interpret, pltpu.InterpretParams):
            p = rewrites.parallel_as_prefix(p)     # that interpreter only: the static analyses see them as written
        if stub is not None:
            return stub(eqn.replace(params=p), invals)
        return eqn.primitive.bind(*invals, **{**p, "interpret": interpret})
    if name in release.INLINE_CLOSED:
        body = p[release.INLINE_CLOSED[name]]
        if jaxprs.is_closed(body):
            return evaluate(body.jaxpr, body.consts, invals, interpret, stub)
        return evaluate(body, (), invals, interpret, stub)
    if name in release.INLINE_OPEN:
        return evaluate(p[release.INLINE_OPEN[name]], (), invals, interpret, stub)
    if name in ("cond", "while", "scan"):
        return _eval_loop(name, p, invals, interpret, stub)
    if any(count_pallas_calls(sub) for v in p.values() for sub in jaxprs.sub_jaxprs(v)):
        raise UnsupportedPrimitive(
            f"the grader cannot reach a pallas_call inside '{name}'; call the kernel directly, "
            "or through jit, cond, fori_loop/while_loop or scan")
    return eqn.primitive.bind(*invals, **p)


def forced(traced: Traced, rung: str, params: dict[str, Any] | None = None,
           in_order: bool = False, *, name: str | None = None, options: dict | None = None,
           tpu_precision: bool = False) -> Callable:
    """A fresh jitted function running ``traced`` with every kernel on ``rung``
    (with ``in_order``, every grid axis as 'arbitrary'; with ``tpu_precision``,
    float32 products in kernels rounded as a TPU rounds them). ``name`` names
    its compiled module ("jit_" + name), for finding it in a profiler trace;
    ``options`` adds XLA compiler options to the rung's."""
    from .precision import rounded_kernels
    interpret = interpret_value(rung, params)
    closed = traced.closed
    stub = rewrites.in_order(interpret) if in_order else rounded_kernels(interpret) if tpu_precision else None

    def run(*a):
        return evaluate(closed.jaxpr, closed.consts, a, interpret, stub)
    if name is not None:
        run.__name__ = run.__qualname__ = name
    return jax.jit(run, compiler_options={**release.COMPILER_OPTIONS.get(rung, {}), **(options or {})} or None)


def _key(params: dict[str, Any] | None):
    """A hashable form of interpreter parameters, or None when one cannot be
    hashed. A callable counts as itself: the grader passes one shared
    recorder (``hooks.record_grid_point``), so recording runs share programs."""
    items = sorted((params or {}).items())
    try:
        hash(tuple(items))
    except TypeError:
        return None
    return tuple(items)


class Executables:
    """Jitted runs of traced functions, one per (traced function, rung,
    parameters): a second run with the same three reuses the compiled
    executable (memory fills are read at run time, see ``hooks``)."""

    def __init__(self) -> None:
        self._fns: dict = {}
        self._keep: list = []       # the traced functions the keys' ids refer to
        self.compiled = 0           # how many distinct executables were built

    def function(self, traced: Traced, rung: str, params: dict[str, Any] | None = None,
                 in_order: bool = False) -> Callable:
        pkey = _key(params)
        if pkey is None:
            self.compiled += 1
            return forced(traced, rung, params, in_order)
        key = (id(traced), rung, pkey, in_order)
        if key not in self._fns:
            self._fns[key] = forced(traced, rung, params, in_order)
            self._keep.append(traced)
            self.compiled += 1
        return self._fns[key]

    def run(self, traced: Traced, array_args: Sequence[Any], rung: str,
            params: dict[str, Any] | None = None, in_order: bool = False) -> Any:
        flat = self.function(traced, rung, params, in_order)(*array_args)
        flat = [jax.block_until_ready(x) for x in flat]
        return jax.tree.unflatten(traced.out_tree, flat)


def run(traced: Traced, array_args: Sequence[Any], rung: str,
        params: dict[str, Any] | None = None) -> Any:
    """Run once with a fresh executable (nothing shared with any other run)."""
    flat = forced(traced, rung, params)(*array_args)
    flat = [jax.block_until_ready(x) for x in flat]
    return jax.tree.unflatten(traced.out_tree, flat)


class Refused(Exception):
    """Mosaic refused the kernel; the message is the compiler's."""


def refused_by_mosaic(exc: BaseException) -> bool:
    """Is this exception, raised while compiling for a TPU, Mosaic refusing the
    kernel (rather than anything else going wrong: memory, the runtime)?"""
    import importlib
    for module, name in release.MOSAIC_REFUSALS:
        cls = getattr(importlib.import_module(module), name, None)
        if cls is not None and isinstance(exc, cls):
            return True
    from jax.errors import JaxRuntimeError
    return isinstance(exc, JaxRuntimeError) and release.MOSAIC_MARK in str(exc)


def lowered_for_tpu(traced: Traced, specs: Sequence[Any], name: str | None = None) -> Any:
    """``traced`` with every kernel lowered by Pallas's TPU lowering (Mosaic's
    input), on a TPU or cross-lowered on any machine. Tracing is the grader's
    own rewrite and raises as it is; an exception while lowering is the
    lowering refusing the kernel (it raises ValueError, NotImplementedError or
    LoweringException for what Mosaic does not take), raised as ``Refused``."""
    elsewhere = jax.default_backend() != "tpu"
    with without_host_prints() if elsewhere else _nothing():
        staged = forced(traced, "tpu", name=name).trace(*specs)
    try:
        with tpu_target() if elsewhere else _nothing(), target_chip_info():
            return staged.lower(lowering_platforms=("tpu",))
    except (MemoryError, RecursionError):
        raise
    except Exception as e:  # noqa: BLE001 - any other failure to lower is the refusal
        raise Refused(f"{type(e).__name__}: {e}") from None


def compiled_for_tpu(traced: Traced, specs: Sequence[Any], name: str | None = None) -> Any:
    """The TPU executable of ``traced`` (on a TPU); ``Refused`` when Mosaic
    will not compile it, anything else raised as it is."""
    lowered = lowered_for_tpu(traced, specs, name)
    try:
        return lowered.compile()
    except Exception as e:
        if refused_by_mosaic(e):
            raise Refused(f"{type(e).__name__}: {e}") from None
        raise


def target_chip_info():
    """While lowering on a machine without a TPU: the default device's kind
    answers for the target chip where the TPU lowering asks the default device
    rather than the abstract mesh (release.TPU_INFO_REGISTRY)."""
    import contextlib
    import importlib
    if release.TPU_INFO_REGISTRY is None or jax.default_backend() == "tpu":
        return _nothing()
    module, name = release.TPU_INFO_REGISTRY
    tpu_info = importlib.import_module(module)
    registry = getattr(tpu_info, name)
    with tpu_target():
        info = tpu_info.get_tpu_info()
    kind = jax.devices()[0].device_kind

    @contextlib.contextmanager
    def registered():
        had = kind in registry
        old = registry.get(kind)
        registry[kind] = lambda: info
        # get_tpu_info caches its answer: cleared on the way in and out, so the CPU is
        # the target chip only inside this block (a later lowering outside it refuses).
        clear = getattr(tpu_info.get_tpu_info, "cache_clear", lambda: None)
        clear()
        try:
            yield
        finally:
            if had:
                registry[kind] = old
            else:
                registry.pop(kind, None)
            clear()
    return registered()


def _nothing():
    from contextlib import nullcontext
    return nullcontext()


def unwrap_error(exc: BaseException) -> tuple[str, str]:
    """(exception type, message) of the real error behind a wrapped callback error."""
    text = str(exc)
    if release.CALLBACK_WRAPPER.search(text):
        found = list(release.BURIED_EXCEPTION.finditer(text))
        if found:
            last = found[-1]
            return last.group("type").rsplit(".", 1)[-1], last.group("msg").strip()
    return type(exc).__name__, text


def reset_state() -> None:
    """TPU interpret mode keeps simulated memory after an exception, on purpose."""
    pltpu.reset_tpu_interpret_mode_state()


def jax_version() -> str:
    return jax.__version__
