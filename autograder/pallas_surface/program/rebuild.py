"""A traced program rebuilt from its document (run by the grader's child, which
never imports or runs student code).

``decode`` turns the document into values and sub-programs; ``Program``
rebinds its equations one by one: a first-order primitive by its registered
name (``registry``: generic, or reviewed when it has effects; ``special``
checks the generic rule's conditions), a higher-order one by its explicit rule
here (pallas_call, pl.kernel's mpmd_map, platform branches; cond, while, scan
and run_scoped with their sub-programs rebuilt first), check and reduce by
their own (``special``). The result is an ordinary Python function of the
array inputs; ``rung.trace`` takes it from there.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable

import jax
import numpy as np
from jax._src import core as jax_core, source_info_util

from .. import release
from . import names, registry, schema, special
from .decode import Decoder, Eqn, SubProgram
from .schema import Refused


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
        self.sources = list(dec.sources)
        self.frames = [_traceback_at(*src) for src in dec.sources]

    def function(self) -> Callable:
        def rebuilt(*args):
            flat = self.main.evaluate(self, args)
            return jax.tree_util.tree_unflatten(self.out_tree, flat)
        return rebuilt

    def apply(self, eqn: Eqn, invals: list) -> list:
        try:
            return self._apply(eqn, invals)
        except Refused as r:
            if getattr(r, "placed", False) or eqn.src is None:
                raise
            file, line, _function = self.sources[eqn.src]
            placed = Refused(f"{r} (at {file}:{line})")
            placed.placed = True
            raise placed from None

    def _apply(self, eqn: Eqn, invals: list) -> list:
        where = self.frames[eqn.src] if eqn.src is not None else None
        with source_info_util.user_context(where) if where is not None else contextlib.nullcontext():
            if eqn.prim in names.INLINED:
                body = eqn.params[names.INLINED[eqn.prim]]
                if not isinstance(body, SubProgram):
                    raise Refused(f"'{eqn.prim}' without a body")
                if self.in_kernel and body.consts:
                    # Inlined, its constants would be the kernel body's, which Pallas refuses:
                    # a call of its own keeps them (jnp.polyadd's empty index array in a kernel).
                    return list(jax.jit(lambda *a: body.evaluate(self, a))(*invals))
                return body.evaluate(self, invals)
            if eqn.prim == release.PLATFORM_INDEX:
                return [np.int32(self._platform(eqn.params.get("platforms")))]
            if eqn.prim == "cond" and eqn.params.get(release.BRANCHES_PLATFORMS) is not None:
                eqn, taken = self._platform_cond(eqn, invals)
                if taken is not None:
                    return taken
            if eqn.prim == release.HOST_PRINT and isinstance(eqn.params.get("fmt"), str):
                # Formatted by the grader's child: fields of its arguments only, never their attributes.
                eqn = Eqn(eqn.prim, eqn.inputs, eqn.outputs,
                          {**eqn.params, "fmt": special.plain_format(eqn.params["fmt"])}, eqn.src)
            if eqn.prim == "check":
                return special.check(invals, eqn.params, self.sources[eqn.src] if eqn.src is not None else None)
            if eqn.prim == release.MPMD_MAP:
                prim, params = registry.PRIMITIVES[release.PALLAS_CALL], self._mpmd_map(dict(eqn.params), invals)
            else:
                prim = registry.PRIMITIVES.get(eqn.prim)
                if prim is None:
                    raise Refused(f"primitive {eqn.prim!r} is not one the grader rebuilds")
                if eqn.prim == "reduce":
                    return list(special.reduce(self, prim, invals, eqn.params))
                if eqn.prim == "empty":
                    return special.empty(eqn.params)
                if registry.kind(eqn.prim) == "generic":
                    special.generic(eqn.prim, prim, invals, eqn.params)
                params = self._rebuilt_params(eqn, invals)
            out = prim.bind(*invals, **params)
        return list(out) if prim.multiple_results else [out]

    def _platform_cond(self, eqn: Eqn, invals: list) -> tuple[Eqn, list | None]:
        """A lax.platform_dependent's cond: outside a kernel the TPU's branch, run
        (XLA lowers a platform cond to the lowering platform's branch, whatever its
        index); in a kernel, the cond without its platforms (Mosaic lowers it as a
        plain cond on its index, and platform_index gave Mosaic's)."""
        platforms, branches = eqn.params[release.BRANCHES_PLATFORMS], eqn.params.get("branches")
        if not (isinstance(branches, tuple) and isinstance(platforms, tuple)
                and len(branches) == len(platforms) and len(invals) >= 1
                and all(isinstance(b, SubProgram) for b in branches)):
            raise Refused("a malformed lax.platform_dependent")
        if not self.in_kernel:
            return eqn, branches[self._platform(platforms)].evaluate(self, invals[1:])
        self._platform(platforms)
        return Eqn(eqn.prim, eqn.inputs, eqn.outputs,
                   {k: v for k, v in eqn.params.items() if k != release.BRANCHES_PLATFORMS}, eqn.src), None

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


def _replace(obj, **kw):
    import dataclasses
    return dataclasses.replace(obj, **kw)


def load(doc: dict) -> Program:
    """Decode a checked document; raises ``Refused`` naming what it will not rebuild."""
    return Program(doc)
