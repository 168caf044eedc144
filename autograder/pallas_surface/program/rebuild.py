"""A traced program rebuilt from its document (run by the grader's child, which
never imports or runs student code).

The document is decoded value by value with explicit constructors (``schema``
names what is allowed); sub-programs (kernel bodies, index maps, branches,
loop bodies) are rebuilt by tracing an evaluator of their equations with
JAX's own tracing, so effects, avals and jaxpr invariants are computed by
this JAX, not taken from the document. The result is an ordinary Python
function of the array inputs; ``rung.trace`` takes it from there.
"""
from __future__ import annotations

import base64
import contextlib
import importlib
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import jax
import ml_dtypes
import numpy as np
from jax._src import api_util, config, core as jax_core, linear_util as lu, source_info_util
from jax._src.interpreters import partial_eval as pe

from .. import release
from . import jaxprs, schema
from .schema import Refused

_FLAT = importlib.import_module(release.FLAT_TREES) if release.FLAT_TREES else None


def _primitives() -> dict[str, jax_core.Primitive]:
    """Every allowed primitive, by name, from the modules that define them."""
    found = {}
    for name in ("jax._src.lax.lax", "jax._src.lax.slicing", "jax._src.lax.special", "jax._src.lax.windowed_reductions",
                 "jax._src.lax.control_flow.loops", "jax._src.lax.control_flow.conditionals",
                 "jax._src.state.primitives", "jax._src.pallas.primitives",
                 "jax._src.pallas.mosaic.primitives", "jax._src.pallas.pallas_call", "jax._src.pallas.mpmd",
                 "jax._src.lax.parallel",
                 "jax._src.debugging", "jax._src.ad_util"):
        for v in vars(importlib.import_module(name)).values():
            if isinstance(v, jax_core.Primitive) and v.name in schema.PRIMITIVES:
                found.setdefault(v.name, v)
    return found


PRIMITIVES = _primitives()


def _dtypes() -> dict[str, Any]:
    from jax._src.pallas import core as pcore
    from jax._src.pallas.mosaic import core as tcore
    out = {n: np.dtype(n) for n in schema.DTYPES
           if n not in ("bfloat16", "float8_e4m3fn", "float8_e5m2", "semaphore", "dma_sem",
                        "barrier_semaphore")}
    out.update(bfloat16=np.dtype(ml_dtypes.bfloat16), float8_e4m3fn=np.dtype(ml_dtypes.float8_e4m3fn),
               float8_e5m2=np.dtype(ml_dtypes.float8_e5m2), semaphore=pcore.Semaphore(),
               barrier_semaphore=pcore.BarrierSemaphore(), dma_sem=tcore.DMASemaphore())
    return out


DTYPES = _dtypes()


class Leaf:
    """A leaf of a decoded tree definition (only its position matters)."""


@dataclass
class SubProgram:
    """A decoded jaxpr, rebuilt into a real one when its equation is evaluated."""
    constvars: list
    invars: list
    eqns: list
    outvars: list
    consts: list          # for a closed jaxpr: the decoded constants
    closed: bool
    names: tuple | None = None   # argument names (the interpreter's messages use them)

    def avals(self) -> list:
        return [aval for _id, aval in self.invars]

    def evaluate(self, program: "Program", args: Sequence[Any], consts: Sequence[Any] | None = None) -> list:
        env: dict[int, Any] = {}
        for (vid, _aval), c in zip(self.constvars, self.consts if consts is None else consts):
            env[vid] = c
        if len(args) != len(self.invars):
            raise Refused(f"a sub-program takes {len(self.invars)} arguments; it was given {len(args)}")
        for (vid, _aval), a in zip(self.invars, args):
            env[vid] = a
        for eqn in self.eqns:
            invals = [env[a] if isinstance(a, int) else a.value() for a in eqn.inputs]
            outs = program.apply(eqn, invals)
            for vid, o in zip(eqn.outputs, outs):
                env[vid] = o
        return [env[a] if isinstance(a, int) else a.value() for a in self.outvars]

    def trace(self, program: "Program", context=contextlib.nullcontext) -> tuple[jax_core.Jaxpr, list]:
        """A real jaxpr of this sub-program, traced over its inputs' avals."""
        fn = lambda *args: self.evaluate(program, args)
        debug = api_util.debug_info("pallas-autograder rebuild", fn, tuple(self.avals()), {})
        if self.names is not None:
            debug = debug._replace(arg_names=self.names)
        with context(), config.mutable_array_checks(False):
            jaxpr, _out, consts = pe.trace_to_jaxpr_dynamic(lu.wrap_init(fn, debug_info=debug), self.avals())
        return jaxpr, consts

    def closed_jaxpr(self, program: "Program", context=contextlib.nullcontext):
        jaxpr, consts = self.trace(program, context)
        return jaxprs.close(jaxpr, consts)

    def open_jaxpr(self, program: "Program", context=contextlib.nullcontext, inputs: Sequence[Any] = ()):
        """``inputs``: the equation's, which bind the constvars (a run_scoped body's)."""
        if self.constvars:
            return self._with_constvars(program, context, inputs)
        jaxpr, consts = self.trace(program, context)
        if consts:
            raise Refused("a kernel body or scoped region captures array constants")
        return jaxpr

    def _with_constvars(self, program: "Program", context, inputs: Sequence[Any]):
        """An open jaxpr whose constvars are bound by its equation's inputs (a
        run_scoped body's closed-over refs): traced over constvars and invars
        alike, then the first become constvars again (jaxprs.bind_constvars)."""
        n = len(self.constvars)
        lifted = SubProgram([], [*self.constvars, *self.invars], self.eqns, self.outvars, [], False)
        jaxpr, consts = lifted.trace(program, context)
        if consts:
            raise Refused("a kernel body or scoped region captures array constants")
        return jaxprs.bind_constvars(jaxpr, n, inputs)


@dataclass
class Literal:
    val: Any

    def value(self):
        return self.val


@dataclass
class Eqn:
    prim: str
    inputs: list          # var ids or Literals
    outputs: list         # var ids
    params: dict
    src: int | None


class Decoder:
    def __init__(self, sources: list):
        from .serial import CLASSES, ENUMS
        self.classes, self.enums = CLASSES, ENUMS
        self.sources = sources
        self.array_bytes = 0
        self.eqns = 0

    def value(self, x: Any, depth: int = 0) -> Any:
        if depth > schema.MAX_DEPTH:
            raise Refused("the program nests too deep")
        if x is None or isinstance(x, (bool, int, str)):
            return x
        if isinstance(x, float):
            return x
        if not (isinstance(x, dict) and len(x) == 1):
            raise Refused(f"an undecodable value {str(x)[:60]!r}")
        (tag, p), = x.items()
        d = depth + 1
        if tag == "t":
            return tuple(self.value(v, d) for v in self._list(p))
        if tag == "l":
            return [self.value(v, d) for v in self._list(p)]
        if tag == "d":
            return {self.value(k, d): self.value(v, d) for k, v in self._pairs(p)}
        if tag in ("f", "s", "a", "dt", "sa", "ref", "e", "leaf"):
            return self._scalar_like(tag, p, d)
        if tag == "dc":
            return self._instance(p, d)
        if tag == "tree":
            from .serial import REGISTRIES
            name, obj = p if isinstance(p, list) and len(p) == 2 else (None, None)
            if name not in REGISTRIES:
                raise Refused(f"a tree from an unknown registry {str(name)[:20]!r}")
            return REGISTRIES[name].flatten(self.value(obj, d))[1]
        if tag in ("jx", "cjx"):
            return self.subprogram(p, tag == "cjx", d)
        if tag in ("ftt", "ftn") and _FLAT is not None:
            return self._flat(tag, p, d)
        raise Refused(f"an unknown tag {str(tag)[:20]!r}")

    def _list(self, p) -> list:
        if not isinstance(p, list):
            raise Refused("a malformed list")
        return p

    def _pairs(self, p) -> list:
        if not isinstance(p, list) or not all(isinstance(i, list) and len(i) == 2 for i in p):
            raise Refused("a malformed table")
        return p

    def _scalar_like(self, tag: str, p: Any, d: int) -> Any:
        if tag == "f":
            if p not in ("nan", "inf", "-inf"):
                raise Refused(f"a malformed float {str(p)[:20]!r}")
            return float(p)
        if tag == "leaf":
            return Leaf()
        if tag == "dt":
            return self.dtype(p)
        if tag == "s":
            name, v = p
            return np.asarray(v, dtype=self.dtype(name))[()]
        if tag == "a":
            return self._array(p)
        if tag == "sa":
            shape, dtype, weak = p
            return jax_core.ShapedArray(self.shape(shape), self.value(dtype, d), bool(weak))
        if tag == "ref":
            from jax._src.state.types import AbstractRef
            inner, space = p
            return AbstractRef(self.value(inner, d), self.value(space, d))
        key, name = p
        if key not in self.enums or not isinstance(name, str) or name not in self.enums[key].__members__:
            raise Refused(f"enum {str(key)[:40]}.{str(name)[:40]} is not one the grader rebuilds")
        return self.enums[key][name]

    def _instance(self, p: Any, d: int) -> Any:
        key, fields = p
        if key == "TensorCoreMesh":
            return _tensorcore_mesh({str(k): self.value(v, d) for k, v in self._pairs(fields)})
        if key not in self.classes:
            raise Refused(f"class {str(key)[:60]!r} is not one the grader rebuilds")
        kw = {str(k): self.value(v, d) for k, v in self._pairs(fields)}
        try:
            return self.classes[key](**kw)
        except (TypeError, ValueError) as e:
            raise Refused(f"{key} could not be rebuilt: {str(e)[:200]}") from None

    def dtype(self, name: Any):
        if name not in DTYPES:
            raise Refused(f"dtype {str(name)[:40]!r} is not one the grader rebuilds")
        return DTYPES[name]

    def shape(self, shape: Any) -> tuple[int, ...]:
        if not isinstance(shape, list) or len(shape) > schema.MAX_RANK or \
                not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
            raise Refused(f"a malformed shape {str(shape)[:60]}")
        if int(np.prod(shape, dtype=np.float64)) > schema.MAX_ELEMENTS:
            raise Refused(f"a shape of more than {schema.MAX_ELEMENTS} elements: {shape}")
        return tuple(shape)

    def _array(self, p: Any) -> np.ndarray:
        name, shape, data = p
        dtype, shape = self.dtype(name), self.shape(shape)
        if not isinstance(dtype, np.dtype) or not isinstance(data, str):
            raise Refused("a malformed array constant")
        raw = base64.b64decode(data.encode("ascii"), validate=True)
        self.array_bytes += len(raw)
        if self.array_bytes > schema.MAX_ARRAY_BYTES or len(raw) != dtype.itemsize * int(np.prod(shape)):
            raise Refused("an array constant of the wrong size, or over the limit")
        return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()

    # -- programs -----------------------------------------------------------
    def var(self, v: Any, d: int) -> tuple[int, Any]:
        if not isinstance(v, dict) or not isinstance(v.get("v"), int):
            raise Refused("a malformed variable")
        return v["v"], self.value(v.get("aval"), d)

    def atom(self, a: Any, d: int) -> int | Literal:
        if isinstance(a, dict) and "lit" in a:
            return Literal(_literal(self.value(a["lit"], d), self.value(a.get("aval"), d)))
        return self.var({"v": a.get("v") if isinstance(a, dict) else None, "aval": None}, d)[0]

    def _flat(self, tag: str, p: Any, d: int) -> Any:
        """A scan's flat tree (serial.Encoder._flat): tuples of leaf counts."""
        if tag == "ftn":
            if not isinstance(p, int) or isinstance(p, bool) or not 0 <= p <= schema.MAX_EQNS:
                raise Refused("a malformed flat tree")
            return _FLAT.nones(p)
        if d > schema.MAX_DEPTH:
            raise Refused("a flat tree nested too deep")
        return _FLAT.FTTuple(*(self._flat(*self._tagged(e), d + 1) for e in self._list(p)))

    def _tagged(self, e: Any) -> tuple[str, Any]:
        if not (isinstance(e, dict) and len(e) == 1 and next(iter(e)) in ("ftt", "ftn")):
            raise Refused("a malformed flat tree")
        return next(iter(e.items()))

    def subprogram(self, p: Any, closed: bool, d: int) -> SubProgram:
        jx = p.get("jaxpr") if closed and isinstance(p, dict) else p
        if not isinstance(jx, dict):
            raise Refused("a malformed sub-program")
        consts = [self.value(c, d) for c in self._list(p.get("consts", []))] if closed else []
        invars = [self.var(v, d) for v in self._list(jx.get("invars"))]
        names = jx.get("names")
        if names is not None and not (isinstance(names, list) and len(names) == len(invars)
                                      and all(isinstance(n, str) and len(n) <= 80 for n in names)):
            raise Refused("malformed argument names")
        return SubProgram([self.var(v, d) for v in self._list(jx.get("constvars"))], invars,
                          [self.eqn(e, d) for e in self._list(jx.get("eqns"))],
                          [self.atom(a, d) for a in self._list(jx.get("outvars"))], consts, closed,
                          tuple(names) if names is not None else None)

    def eqn(self, e: Any, d: int) -> Eqn:
        self.eqns += 1
        if self.eqns > schema.MAX_EQNS or not isinstance(e, dict):
            raise Refused("too many or malformed equations")
        prim = e.get("p")
        if prim in schema.HOST_CALLBACKS:
            raise Refused(f"host callback '{prim}': a kernel may not call back into Python")
        if prim not in PRIMITIVES and prim not in schema.INLINED:
            raise Refused(f"primitive {str(prim)[:60]!r} is not one the grader rebuilds")
        params = {str(k): self.value(v, d + 1) for k, v in self._pairs(e.get("params"))}
        src = e.get("src")
        if src is not None and not (isinstance(src, int) and 0 <= src < len(self.sources)):
            raise Refused("a malformed source reference")
        return Eqn(prim, [self.atom(a, d) for a in self._list(e.get("in"))],
                   [self.var(v, d)[0] for v in self._list(e.get("out"))], params, src)


def _literal(val: Any, aval: Any) -> Any:
    """A literal as bind expects it: weak-typed Python scalars stay Python scalars."""
    if getattr(aval, "weak_type", False) and isinstance(val, np.generic):
        return val.item()
    return val


def _traceback_at(file: str, line: int, function: str):
    """A real traceback whose innermost frame is ``file:line`` in ``function``
    (the race detector and lowering read tracebacks, and lowering joins them):
    a two-line function compiled under the student's file name and line,
    called to capture its own traceback."""
    from jax._src.lib import xla_client
    name = function if str(function).isidentifier() else "kernel"
    line = max(int(line), 2)
    source = "\n" * (line - 2) + f"def {name}():\n    return _capture()\n"
    scope = {"_capture": xla_client.Traceback.get_traceback}
    exec(compile(source, str(file)[:200], "exec"), scope)   # our own two lines, not student code
    return scope[name]()


class Program:
    """A decoded document: call ``function()`` for the rebuilt Python function."""

    def __init__(self, doc: dict):
        schema.check(doc)
        self.in_kernel = 0      # > 0 while a kernel body or index map is rebuilt (see _platform)
        dec = Decoder(doc.get("sources") or [])
        self.main = dec.subprogram(doc["program"], True, 0)
        self.out_tree = dec.value(doc.get("out_tree"), 0)
        if not isinstance(self.out_tree, jax.tree_util.PyTreeDef):
            raise Refused("the program does not say how its outputs are structured")
        self.frames = [_traceback_at(*src) for src in dec.sources]

    def function(self) -> Callable:
        def rebuilt(*args):
            flat = self.main.evaluate(self, args)
            return jax.tree_util.tree_unflatten(self.out_tree, flat)
        return rebuilt

    def apply(self, eqn: Eqn, invals: list) -> list:
        where = self.frames[eqn.src] if eqn.src is not None else None
        ctx = source_info_util.user_context(where) if where is not None else contextlib.nullcontext()
        with ctx:
            if eqn.prim in schema.INLINED:
                body = eqn.params[schema.INLINED[eqn.prim]]
                return body.evaluate(self, invals)
            if eqn.prim == release.PLATFORM_INDEX:
                return [np.int32(self._platform(eqn.params.get("platforms")))]
            if eqn.prim == "cond" and eqn.params.get(release.BRANCHES_PLATFORMS) is not None:
                platforms, branches = eqn.params[release.BRANCHES_PLATFORMS], eqn.params.get("branches")
                if not (isinstance(branches, tuple) and isinstance(platforms, tuple)
                        and len(branches) == len(platforms) and len(invals) >= 1
                        and all(isinstance(b, SubProgram) for b in branches)):
                    raise Refused("a malformed lax.platform_dependent")
                if not self.in_kernel:
                    # XLA lowers a platform cond to the lowering platform's branch, whatever its index.
                    return branches[self._platform(platforms)].evaluate(self, invals[1:])
                # Mosaic lowers it as a plain cond on its index (platform_index gave Mosaic's).
                self._platform(platforms)
                eqn = Eqn(eqn.prim, eqn.inputs, eqn.outputs,
                          {k: v for k, v in eqn.params.items() if k != release.BRANCHES_PLATFORMS}, eqn.src)
            if eqn.prim == release.MPMD_MAP:
                prim, params = PRIMITIVES[release.PALLAS_CALL], self._mpmd_map(dict(eqn.params), invals)
            else:
                params, prim = self._rebuilt_params(eqn, invals), PRIMITIVES[eqn.prim]
            out = prim.bind(*invals, **params)
        return list(out) if prim.multiple_results else [out]

    def _platform(self, platforms: Any) -> int:
        """The branch of a ``lax.platform_dependent`` a TPU runs, so that every rung,
        probe and analysis grades the one program a TPU would compile: in a kernel
        body or index map Mosaic's rule (the first branch naming "mosaic" or the
        default), elsewhere XLA's for the "tpu" platform (the branch naming it, else
        the default). The interpreters, on a CPU, would pick the CPU's."""
        if not (isinstance(platforms, tuple) and platforms and all(
                ps is None or (isinstance(ps, tuple) and ps and all(isinstance(n, str) for n in ps))
                for ps in platforms)):
            raise Refused("a malformed lax.platform_dependent")
        names = [n for ps in platforms if ps is not None for n in ps]
        if len(names) != len(set(names)) or sum(ps is None for ps in platforms) > 1:
            raise Refused("a lax.platform_dependent names a platform twice")
        mine = "mosaic" if self.in_kernel else "tpu"
        for i, ps in enumerate(platforms):
            if ps is None and self.in_kernel or ps is not None and mine in ps:
                return i
        default = next((i for i, ps in enumerate(platforms) if ps is None), None)
        if default is None:
            raise Refused(f"a lax.platform_dependent has no branch for a TPU ({mine!r}) and no default: "
                          "the kernel cannot run on the chip the course grades for")
        return default

    @contextlib.contextmanager
    def _kernel(self):
        """While a kernel body or index map is rebuilt (Mosaic lowers it)."""
        self.in_kernel += 1
        try:
            yield
        finally:
            self.in_kernel -= 1

    def _rebuilt_params(self, eqn: Eqn, invals: list) -> dict:
        p = dict(eqn.params)
        if eqn.prim == "pallas_call":
            return self._pallas_call(p)
        for key, v in p.items():
            if isinstance(v, SubProgram):
                p[key] = v.closed_jaxpr(self) if v.closed else v.open_jaxpr(self, inputs=invals)
            elif isinstance(v, tuple) and v and all(isinstance(b, SubProgram) for b in v):
                p[key] = tuple(b.closed_jaxpr(self) for b in v)
        return p

    def _pallas_call(self, p: dict) -> dict:
        from jax._src.pallas import core as pcore
        gm = p["grid_mapping"]
        if not isinstance(gm, pcore.GridMapping):
            raise Refused("pallas_call without a grid mapping")
        blocks = []
        for bm in gm.block_mappings:
            if not isinstance(bm.index_map_jaxpr, SubProgram):
                raise Refused("a block mapping without an index map")
            with self._kernel():
                index_map = bm.index_map_jaxpr.closed_jaxpr(
                    self, lambda: pcore.tracing_grid_env(gm.grid, gm.vmapped_dims))
            blocks.append(_replace(bm, index_map_jaxpr=index_map))
        gm = _replace(gm, block_mappings=tuple(blocks))
        kernel = p["jaxpr"]
        if not isinstance(kernel, SubProgram):
            raise Refused("pallas_call without a kernel body")
        with self._kernel():
            body = kernel.open_jaxpr(self, gm.trace_env)
        p.update(grid_mapping=gm, interpret=False, jaxpr=body)
        return p


    def _mpmd_map(self, p: dict, invals: list) -> dict:
        """pl.kernel's mpmd_map as the pallas_call JAX lowers it to on CPU
        (jax/_src/pallas/mpmd.py, _mpmd_map_fallback_lowering): the mesh is the
        grid (one point per core, named by the mesh's axis), every operand a
        whole ref in its memory space (the mesh's default: ANY), the body's
        trailing refs its scratch; the mesh rides along, so TPU interpret mode
        runs it as a kernel over a TensorCoreMesh (its cores, a fixed division)."""
        from jax._src.pallas import core as pcore
        from jax._src.pallas.mosaic import core as tcore
        from jax._src.state import types as stypes
        meshes, bodies, outs = p.get("meshes"), p.get("jaxprs"), p.get("out_avals")
        if not (isinstance(meshes, tuple) and isinstance(bodies, tuple) and len(meshes) == len(bodies) == 1
                and isinstance(meshes[0], tcore.TensorCoreMesh) and isinstance(bodies[0], SubProgram)
                and not bodies[0].consts and not bodies[0].constvars):
            raise Refused("mpmd_map: the grader rebuilds one kernel body over one TensorCoreMesh")
        if p.get("external_meshes") not in ((), None):
            raise Refused("mpmd_map over external meshes is not one the grader rebuilds")
        if not (isinstance(outs, tuple) and all(type(a) is jax_core.ShapedArray for a in outs)):
            raise Refused("mpmd_map: malformed output types")
        aliases = p.get("input_output_aliases") or {}
        if not (isinstance(aliases, dict) and all(isinstance(k, int) and isinstance(v, int) and
                                                  0 <= k < len(invals) and 0 <= v < len(outs)
                                                  for k, v in aliases.items())):
            raise Refused("mpmd_map: malformed input/output aliases")
        mesh, body = meshes[0], bodies[0]
        avals = body.avals()
        n_in, n_out = len(invals), len(outs)
        if len(avals) < n_in + n_out or not all(isinstance(a, stypes.AbstractRef) for a in avals):
            raise Refused("mpmd_map: the kernel body must take a ref per input, output and scratch buffer")

        def space(aval):
            ms = getattr(aval, "memory_space", None)
            return ms if isinstance(aval, jax_core.ShapedArray) and ms is not None and \
                not isinstance(ms, jax_core.MemorySpace) else mesh.default_memory_space

        in_avals = [jax_core.typeof(x) for x in invals]
        grid_spec = pcore.GridSpec(
            grid=tuple(mesh.shape.items()),
            in_specs=tuple(pcore.BlockSpec(memory_space=space(a)) for a in in_avals),
            out_specs=tuple(pcore.BlockSpec(memory_space=space(a)) for a in outs),
            scratch_shapes=tuple(pcore.MemoryRef(a.inner_aval, a.memory_space) for a in avals[n_in + n_out:]))
        try:
            _, gm = pcore.get_grid_mapping(
                grid_spec, [a.inner_aval for a in avals[:n_in]], jax.tree.structure(tuple(range(n_in))),
                [f"arg{i}" for i in range(n_in)], [a.inner_aval for a in avals[n_in:n_in + n_out]],
                jax.tree.structure(tuple(range(n_out))), [f"out{i}" for i in range(n_out)],
                debug=bool(p.get("debug")))
        except (TypeError, ValueError) as e:
            raise Refused(f"mpmd_map could not be rebuilt: {str(e)[:200]}") from None
        cp = p.get("compiler_params")
        if cp is not None:
            if not isinstance(cp, tcore.CompilerParams):
                raise Refused("mpmd_map: compiler parameters that are not Pallas TPU's")
            cp = cp.replace(dimension_semantics=mesh.dimension_semantics)
        with self._kernel():
            jaxpr = body.open_jaxpr(self, gm.trace_env)
        return dict(jaxpr=jaxpr, grid_mapping=gm, mesh=mesh,
                    input_output_aliases=tuple(aliases.items()), debug=bool(p.get("debug")), interpret=False,
                    compiler_params=cp, cost_estimate=None, out_avals=outs, metadata=None,
                    name=p.get("name") if isinstance(p.get("name"), str) else None)


def _tensorcore_mesh(fields: dict) -> Any:
    """A TensorCoreMesh of one named axis and at most release.MAX_MESH_CORES cores."""
    import warnings

    from jax._src.pallas.mosaic import core as tcore
    axis, cores = fields.get("axis_name"), fields.get("num_cores")
    if set(fields) != {"axis_name", "num_cores"} or not isinstance(axis, str) or not 0 < len(axis) <= 80 \
            or not isinstance(cores, int) or isinstance(cores, bool) or not 1 <= cores <= release.MAX_MESH_CORES:
        raise Refused(f"a TensorCoreMesh must name one axis and have 1 to {release.MAX_MESH_CORES} cores")
    if release.TENSORCORE_MESH_FIELDS:
        return tcore.TensorCoreMesh(axis_name=axis, num_cores=cores)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return tcore.create_tensorcore_mesh(axis, num_cores=cores)


def _replace(obj, **kw):
    import dataclasses
    return dataclasses.replace(obj, **kw)


def load(doc: dict) -> Program:
    """Decode a checked document; raises ``Refused`` naming what it will not rebuild."""
    return Program(doc)
