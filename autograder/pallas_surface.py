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


def _eval(jaxpr: Any, consts: Sequence[Any], args: Sequence[Any], interpret: Any,
          stub: Callable | None = None) -> list:
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


def _closed_fn(closed: Any, interpret: Any, stub: Callable | None = None) -> Callable:
    return lambda *a: _eval(closed.jaxpr, closed.consts, a, interpret, stub)


def _eval_eqn(eqn: Any, invals: list, interpret: Any, stub: Callable | None = None) -> Any:
    """Re-bind one equation, with every pallas_call's interpret replaced.

    Bodies are re-traced rather than patched in place: TPU interpret mode adds
    an ordered IO effect that the original jaxpr never declared, and re-binding
    recomputes effects. Re-tracing also gives each rung fresh jaxprs, so no jit
    cache can serve one rung's executable to another.
    """
    name, p = eqn.primitive.name, eqn.params
    if name == PALLAS_CALL:
        if stub is not None:
            return stub(eqn, invals)
        return eqn.primitive.bind(*invals, **{**p, "interpret": interpret})
    if name in _INLINE_CLOSED:
        body = p[_INLINE_CLOSED[name]]
        if isinstance(body, jax_core.ClosedJaxpr):
            return _eval(body.jaxpr, body.consts, invals, interpret, stub)
        return _eval(body, (), invals, interpret, stub)
    if name in _INLINE_OPEN:
        return _eval(p[_INLINE_OPEN[name]], (), invals, interpret, stub)
    if name == "cond":
        index, *ops = invals
        return jax.lax.switch(index, [_closed_fn(b, interpret, stub) for b in p["branches"]], *ops)
    if name == "while":
        cn, bn = p["cond_nconsts"], p["body_nconsts"]
        cconsts, bconsts, init = invals[:cn], invals[cn:cn + bn], invals[cn + bn:]
        cond_f, body_f = _closed_fn(p["cond_jaxpr"], interpret, stub), _closed_fn(p["body_jaxpr"], interpret, stub)
        return jax.lax.while_loop(lambda c: cond_f(*cconsts, *c)[0],
                                  lambda c: body_f(*bconsts, *c), list(init))
    if name == "scan":
        nc, nk = p["num_consts"], p["num_carry"]
        consts, init, xs = invals[:nc], invals[nc:nc + nk], invals[nc + nk:]
        body_f = _closed_fn(p["jaxpr"], interpret, stub)

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


# ---------------------------------------------------------------------------
# Static probes: everything below reads a traced pallas_call without running
# its kernel.

@dataclass
class CallSite:
    """One pallas_call equation and, when known, the concrete values it received."""
    eqn: Any
    invals: list | None


def call_sites(traced: Traced, args: Sequence[Any] | None = None) -> list[CallSite]:
    """Every pallas_call in the traced function, nested ones included.

    With ``args``, the function is evaluated eagerly with each pallas_call
    replaced by zeros of its output shape, which captures the concrete operands
    (scalar-prefetch values drive index maps) without running any kernel.
    """
    sites: list[CallSite] = []
    if args is None:
        def walk(jaxpr):
            for eqn in jaxpr.eqns:
                if eqn.primitive.name == PALLAS_CALL:
                    sites.append(CallSite(eqn, None))
                for v in eqn.params.values():
                    for sub in _sub_jaxprs(v):
                        walk(sub)
        walk(traced.closed.jaxpr)
        return sites

    import jax.numpy as jnp

    def stub(eqn, invals):
        sites.append(CallSite(eqn, list(invals)))
        return [jnp.zeros(a.shape, a.dtype) for a in eqn.params["out_avals"]]

    _eval(traced.closed.jaxpr, traced.closed.consts, args, None, stub)
    return sites


def dimension_semantics(eqn: Any) -> tuple[str, ...]:
    cp = eqn.params.get("compiler_params")
    sem = None
    if cp is not None:
        sem = getattr(cp, "dimension_semantics", None)
        if sem is None and isinstance(cp, dict):
            inner = cp.get("mosaic_tpu") or cp.get("mosaic")
            sem = getattr(inner, "dimension_semantics", None) if inner is not None else None
    grid = eqn.params["grid_mapping"].grid
    if not sem:
        return tuple("arbitrary" for _ in grid)
    return tuple(str(getattr(s, "value", s)).lower().split(".")[-1] for s in sem)


def _block_elems(block_shape) -> tuple[int, ...] | None:
    out = []
    for d in block_shape:
        name = type(d).__name__
        if name == "Blocked":
            out.append(int(d.block_size))
        elif name == "Squeezed" or d is None:
            out.append(1)
        else:
            return None  # Element / BoundedSlice indexing: offsets, not block indices
    return tuple(out)


def scan_index_maps(site: CallSite) -> dict:
    """Evaluate every operand's index map at every grid point (vmapped, no kernel)."""
    import numpy as np

    from .blockmap import Operand, analyse, grid_points
    from jax._src.state.discharge import discharge_state

    eqn = site.eqn
    gm = eqn.params["grid_mapping"]
    grid = tuple(int(g) for g in gm.grid)
    sem = dimension_semantics(eqn)
    parallel = tuple(i for i, s in enumerate(sem) if s in ("parallel", "core_parallel"))
    points = grid_points(grid)
    n_index = gm.num_index_operands
    prefetch = list(site.invals[:n_index]) if site.invals is not None else []
    if any(isinstance(v, jax_core.Tracer) for v in prefetch):
        prefetch = []  # a call inside a loop body: values differ per iteration
    facts = {"grid": list(grid), "dimension_semantics": list(sem), "operands": [], "skipped": []}
    n_in = gm.num_inputs
    for k, bm in enumerate(gm.block_mappings):
        is_output = k >= n_in
        name = f"output {k - n_in}" if is_output else f"input {k}"
        elems = _block_elems(bm.block_shape)
        space = str(getattr(bm.block_aval, "memory_space", "")) if hasattr(bm, "block_aval") else ""
        if elems is None or "any" in space.lower() or "hbm" in space.lower():
            facts["skipped"].append({"operand": name, "why": "not blocked (manual DMA or element indexing)"})
            continue
        closed = bm.index_map_jaxpr
        jaxpr, consts = closed.jaxpr, closed.consts
        n_grid = len(grid)
        if len(jaxpr.invars) > n_grid:
            if len(prefetch) < len(jaxpr.invars) - n_grid:
                facts["skipped"].append({"operand": name, "why": "scalar-prefetch values unknown"})
                continue
            jaxpr, consts = discharge_state(jaxpr, consts)
        fn = jax_core.jaxpr_as_fun(jax_core.ClosedJaxpr(jaxpr, consts))
        n_out = len(bm.block_shape)

        def at(*gp):
            return fn(*gp, *prefetch)[:n_out]

        cols = [jax.numpy.asarray(points[:, a], jax.numpy.int32) for a in range(n_grid)]
        if n_grid:
            res = jax.vmap(at)(*cols)
            idx = np.stack([np.broadcast_to(np.asarray(r), (len(points),)) for r in res], axis=1)
        else:
            idx = np.asarray([[int(r) for r in at()]])
        facts["operands"].append(analyse(
            Operand(name, is_output, tuple(int(s) for s in bm.array_aval.shape), elems, idx),
            grid, parallel))
    return facts


# Dtypes Mosaic cannot put in a kernel on any TPU generation.
_64BIT = ("float64", "int64", "uint64", "complex64", "complex128")

# The chip the cross-lowering pretends to target. Pallas's TPU lowering reads
# the tiling (8 sublanes x 128 lanes on every generation it knows) from the
# device kind, which it takes from the abstract mesh or else from the default
# device: on CPU that is "cpu", and every rank-1 block is refused with
# "Unsupported TPU device kind: cpu" instead of being checked by the 1-D rule.
TARGET_DEVICE_KIND = "TPU v5 lite"


def _tpu_target():
    """A context in which tracing and lowering see a TPU device kind (jax 0.10.2:
    ``jax.sharding.use_abstract_mesh`` with an ``AbstractDevice``)."""
    from jax.sharding import AbstractDevice, AbstractMesh, use_abstract_mesh
    device = AbstractDevice(device_kind=TARGET_DEVICE_KIND, num_cores=1, platform="tpu")
    return use_abstract_mesh(AbstractMesh((1,), ("grader",), abstract_device=device))


def lower_for_tpu(fn: Callable, args: Sequence[Any], static: Sequence[int] = ()) -> dict:
    """Cross-lower to TPU on CPU: runs Pallas's own TPU lowering, not Mosaic.

    A rejection is real; a pass proves nothing, so 64-bit operands are checked here too.
    """
    traced = trace(fn, args, static)
    for site in call_sites(traced):
        for aval in list(site.eqn.params["out_avals"]) + [v.aval for v in site.eqn.invars]:
            if str(getattr(aval, "dtype", "")) in _64BIT:
                return {"ok": False, "type": "DtypeError", "rule": "64-bit-dtype",
                        "message": f"a pallas_call operand has dtype {aval.dtype}; TPUs have no "
                                   "64-bit vector types"}
    arrays = [a for i, a in enumerate(args) if i not in static]
    closed = traced.closed
    # interpret=False on every pallas_call, whatever the student passed: the
    # student's interpret=True would lower through the interpreter instead.
    compiled = jax.jit(lambda *a: _eval(closed.jaxpr, closed.consts, a, False))
    try:
        with _tpu_target():
            compiled.trace(*arrays).lower(lowering_platforms=("tpu",))
    except Exception as e:  # noqa: BLE001 - any lowering failure is the finding
        etype, msg = unwrap_error(e)
        return {"ok": False, "type": etype, "rule": "lowering", "message": msg[:3000]}
    return {"ok": True}


def _vmem_bytes(aval) -> int | None:
    """Bytes a VMEM allocation takes; None for SMEM, HBM/ANY and semaphores."""
    import numpy as np
    inner = getattr(aval, "inner_aval", aval)
    space = str(getattr(aval, "memory_space", "")).lower()
    if (not hasattr(inner, "shape") or any(m in space for m in ("smem", "any", "hbm"))
            or "sem" in str(getattr(inner, "dtype", "")).lower()):
        return None
    try:
        item = np.dtype(inner.dtype).itemsize
    except TypeError:
        return None
    return int(np.prod(inner.shape, dtype=np.int64)) * item


def _scoped(jaxpr: Any) -> tuple[int, list[dict]]:
    """Peak VMEM of ``pl.run_scoped`` allocations in a kernel body, and what makes it:
    nested scopes are live together, sequential ones reuse the same memory."""
    peak, peak_allocs = 0, []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "run_scoped":
            body = next(_sub_jaxprs(eqn.params["jaxpr"]))
            own = []
            for v in body.invars:
                nbytes = _vmem_bytes(v.aval)
                if nbytes is not None:
                    inner = getattr(v.aval, "inner_aval", v.aval)
                    own.append({"shape": [int(d) for d in inner.shape], "dtype": str(inner.dtype),
                                "bytes": nbytes})
            inner_bytes, inner_allocs = _scoped(body)
            here, allocs = sum(a["bytes"] for a in own) + inner_bytes, own + inner_allocs
        else:
            here, allocs = 0, []
            for v in eqn.params.values():
                for sub in _sub_jaxprs(v):
                    b, a = _scoped(sub)
                    if b > here:
                        here, allocs = b, a
        if here > peak:
            peak, peak_allocs = here, allocs
    return peak, peak_allocs


def vmem_budget(fn: Callable, abstract_args: Sequence[Any], static: Sequence[int] = ()) -> dict:
    """VMEM bytes at the production size: pipelined blocks twice (double buffering)
    or ``pipeline_mode=pl.Buffered(n)`` times, plus scratch, plus the largest set of
    ``pl.run_scoped`` allocations live at once. Traced with abstract shapes only."""
    import numpy as np
    traced = trace(fn, abstract_args, static)
    calls = []
    for site in call_sites(traced):
        gm = site.eqn.params["grid_mapping"]
        blocks, scratch = [], []
        for k, bm in enumerate(gm.block_mappings):
            aval = bm.block_aval
            space = str(getattr(aval, "memory_space", "")).lower()
            if "any" in space or "hbm" in space or "smem" in space:
                continue
            shape = tuple(int(d) for d in aval.shape)
            nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(aval.dtype).itemsize
            mode = getattr(bm, "pipeline_mode", None)
            if mode is not None:
                buffers, buffering = int(mode.buffer_count), f"pl.Buffered({int(mode.buffer_count)})"
            elif tuple(bm.array_aval.shape) == shape:
                # A block that is the whole array is not pipelined: one buffer, not two.
                buffers, buffering = 1, "whole array, not pipelined"
            else:
                buffers, buffering = 2, "double buffering"
            blocks.append({"operand": f"output {k - gm.num_inputs}" if k >= gm.num_inputs else f"input {k}",
                           "shape": list(shape), "dtype": str(aval.dtype), "buffers": buffers,
                           "buffering": buffering, "bytes": buffers * nbytes})
        for a in gm.scratch_avals:
            nbytes = _vmem_bytes(a)
            if nbytes is not None:
                inner = getattr(a, "inner_aval", a)
                scratch.append({"shape": [int(d) for d in inner.shape], "dtype": str(inner.dtype),
                                "bytes": nbytes})
        scoped_bytes, scoped = _scoped(site.eqn.params["jaxpr"])
        total = sum(b["bytes"] for b in blocks) + sum(s["bytes"] for s in scratch) + scoped_bytes
        calls.append({"blocks": blocks, "scratch": scratch, "scoped": scoped, "bytes": total})
    return {"calls": calls, "bytes": max((c["bytes"] for c in calls), default=0)}


# Primitives that do the assignment's real work when they appear outside a kernel.
HEAVY_OUTSIDE = ("dot_general", "reduce_sum", "reduce_max", "reduce_min", "reduce_prod",
                 "argmax", "argmin", "conv_general_dilated", "sort", "cumsum", "cumprod",
                 "cummax", "cumlogsumexp", "pure_callback", "io_callback", "exp", "log", "mul",
                 "add", "sub", "div", "max", "min", "logistic", "tanh")
_DMA = ("dma_start", "dma_wait")


def structure(traced: Traced) -> dict:
    """Which primitives run outside any kernel, and whether kernels use manual DMA."""
    outside: dict[str, int] = {}
    inside: set[str] = set()

    def walk_kernel(jaxpr):
        for eqn in jaxpr.eqns:
            inside.add(eqn.primitive.name)
            for v in eqn.params.values():
                for sub in _sub_jaxprs(v):
                    walk_kernel(sub)

    def walk(jaxpr):
        for eqn in jaxpr.eqns:
            name = eqn.primitive.name
            if name == PALLAS_CALL:
                walk_kernel(eqn.params["jaxpr"])
                continue
            subs = [s for v in eqn.params.values() for s in _sub_jaxprs(v)]
            if subs:
                for s in subs:
                    walk(s)
                continue
            if name in HEAVY_OUTSIDE and any(getattr(v.aval, "size", 1) > 1 for v in eqn.invars
                                             if hasattr(v, "aval")):
                outside[name] = outside.get(name, 0) + 1

    walk(traced.closed.jaxpr)
    return {"pallas_calls": traced.pallas_calls, "outside": outside,
            "manual_dma": any(p in inside for p in _DMA), "kernel_primitives": sorted(inside)}


# ---------------------------------------------------------------------------
# Dynamic probes: memory fills, grid order, races, captured interpreter output.

def order_recorder(order: list) -> Callable:
    """A grid_point_recorder: TPU interpret mode calls it (in a host callback) as
    ``recorder(token, grid_point, core_id)`` at each grid point; it must return the token."""
    def record(token, grid_point, core_id):
        order.append([[int(g) for g in grid_point], int(core_id)])
        return token
    return record


def races_found() -> bool:
    """TPU interpret mode's race flag (set when detect_races finds a race)."""
    from jax._src.pallas.mosaic.interpret import interpret_pallas_call as ipc
    state = getattr(ipc, "races", None)
    return bool(state is not None and state.races_found)


class _RunOptions:
    captured: str = ""


def _fill_patches(fill: float):
    """Both interpreters' sources of 'uninitialized' floats: the generic
    interpreter's outputs, scratch and partial-block padding
    (primitives.uninitialized_value, read at trace time), and TPU interpret
    mode's buffers and padding (interpret utils.get_uninitialized_value, read at
    run time). Integers keep the interpreters' own values."""
    import jax.numpy as jnp
    from jax._src.pallas import primitives
    from jax._src.pallas.mosaic.interpret import utils as iutils

    orig_prim, orig_tpu = primitives.uninitialized_value, iutils.get_uninitialized_value

    def prim(shape, dtype):
        if jnp.issubdtype(dtype, jnp.floating):
            return jnp.full(shape, fill, dtype)
        return orig_prim(shape, dtype)

    def tpu(dtype, uninitialized_memory):
        if jnp.issubdtype(dtype, jnp.floating):
            return fill
        return orig_tpu(dtype, uninitialized_memory)

    return [(primitives, "uninitialized_value", orig_prim, prim),
            (iutils, "get_uninitialized_value", orig_tpu, tpu)]


class run_options:
    """Context for one run: an optional fill value for uninitialized memory and
    padding, and optional capture of what the interpreter prints (race reports,
    semaphores left non-zero) from file descriptor 1."""

    def __init__(self, fill: float | None = None, capture: bool = False):
        self.fill, self.capture = fill, capture
        self.opts = _RunOptions()
        self._patches: list = []

    def __enter__(self) -> _RunOptions:
        import os
        import sys
        import tempfile
        if self.fill is not None:
            self._patches = _fill_patches(float(self.fill))
            for mod, name, _orig, new in self._patches:
                setattr(mod, name, new)
            jax.clear_caches()   # the generic interpreter bakes its fill in at lowering
        if self.capture:
            import io
            sys.stdout.flush()
            self._saved = os.dup(1)
            self._tmp = tempfile.TemporaryFile()
            os.dup2(self._tmp.fileno(), 1)
            # Python-level prints (the race detector's) go through sys.stdout, which
            # need not be file descriptor 1 (under pytest it is not).
            self._saved_stdout, sys.stdout = sys.stdout, io.StringIO()
        return self.opts

    def __exit__(self, *exc) -> None:
        import os
        import sys
        for mod, name, orig, _new in self._patches:
            setattr(mod, name, orig)
        if self._patches:
            jax.clear_caches()
        if self.capture:
            printed = sys.stdout.getvalue()
            sys.stdout = self._saved_stdout
            os.dup2(self._saved, 1)
            os.close(self._saved)
            self._tmp.seek(0)
            text = self._tmp.read().decode("utf-8", "replace") + printed
            self._tmp.close()
            self.opts.captured = text
            sys.stdout.write(text)   # still the student's output too
