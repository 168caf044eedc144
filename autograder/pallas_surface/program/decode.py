"""A program document decoded value by value (run by the grader's child).

Every value is made by an explicit constructor (``schema`` names what is
allowed, ``registry`` what each name stands for in this release); a
sub-program stays a ``SubProgram`` until its equation is rebound
(``rebuild``), which traces an evaluator of its equations with JAX's own
tracing, so effects, avals and jaxpr invariants are this JAX's, not the
document's.
"""
from __future__ import annotations

import base64
import contextlib
import importlib
from dataclasses import dataclass
from typing import Any, Protocol, Sequence

import numpy as np
from jax._src import api_util, config, core as jax_core, linear_util as lu
from jax._src.interpreters import partial_eval as pe

from .. import release
from . import jaxprs, registry, schema
from .schema import Refused


class Rebinder(Protocol):
    """What rebinds a decoded equation (``rebuild.Program``)."""

    def apply(self, eqn: "Eqn", invals: list) -> list: ...

_FLAT = importlib.import_module(release.FLAT_TREES) if release.FLAT_TREES else None


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

    def evaluate(self, program: "Rebinder", args: Sequence[Any], consts: Sequence[Any] | None = None) -> list:
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

    def trace(self, program: "Rebinder", context=contextlib.nullcontext) -> tuple[jax_core.Jaxpr, list]:
        """A real jaxpr of this sub-program, traced over its inputs' avals."""
        fn = lambda *args: self.evaluate(program, args)
        debug = api_util.debug_info("pallas-autograder rebuild", fn, tuple(self.avals()), {})
        if self.names is not None:
            debug = debug._replace(arg_names=self.names)
        with context(), config.mutable_array_checks(False):
            jaxpr, _out, consts = pe.trace_to_jaxpr_dynamic(lu.wrap_init(fn, debug_info=debug), self.avals())
        return jaxpr, consts

    def closed_jaxpr(self, program: "Rebinder", context=contextlib.nullcontext):
        jaxpr, consts = self.trace(program, context)
        return jaxprs.close(jaxpr, consts)

    def open_jaxpr(self, program: "Rebinder", context=contextlib.nullcontext, inputs: Sequence[Any] = ()):
        """``inputs``: the equation's, which bind the constvars (a run_scoped body's)."""
        if self.constvars:
            return self._with_constvars(program, context, inputs)
        jaxpr, consts = self.trace(program, context)
        if consts:
            raise Refused("a kernel body or scoped region captures array constants")
        return jaxpr

    def _with_constvars(self, program: "Rebinder", context, inputs: Sequence[Any]):
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
        self.classes, self.named = registry.CLASSES, registry.NAMED
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
        if tag in ("f", "s", "a", "dt", "sa", "ref", "e", "leaf", "z"):
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
        if tag == "z":
            return _complex(p)
        if tag == "s":
            name, v = p
            dtype = self.dtype(name)
            if not isinstance(dtype, np.dtype) or isinstance(v, list) != (dtype.kind == "c"):
                raise Refused(f"a malformed scalar of dtype {str(name)[:40]}")
            return np.asarray(_complex(v) if isinstance(v, list) else v, dtype=dtype)[()]
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
        if key not in self.named or not isinstance(name, str) or name not in self.named[key]:
            raise Refused(f"enum {str(key)[:60]}.{str(name)[:40]} is not one the grader rebuilds")
        return self.named[key][name]

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
        if not isinstance(name, str) or name not in registry.DTYPES:
            raise Refused(f"dtype {str(name)[:40]!r} is not one the grader rebuilds")
        return registry.DTYPES[name]

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
        if not isinstance(prim, str) or registry.kind(prim) is None:
            raise Refused(f"primitive {str(prim)[:60]!r} is not one the grader rebuilds")
        params = {str(k): self.value(v, d + 1) for k, v in self._pairs(e.get("params"))}
        src = e.get("src")
        if src is not None and not (isinstance(src, int) and 0 <= src < len(self.sources)):
            raise Refused("a malformed source reference")
        return Eqn(prim, [self.atom(a, d) for a in self._list(e.get("in"))],
                   [self.var(v, d)[0] for v in self._list(e.get("out"))], params, src)


def _complex(p: Any) -> complex:
    if not (isinstance(p, list) and len(p) == 2):
        raise Refused("a malformed complex number")
    re_im = [float(v) if isinstance(v, str) and v in schema.FLOAT_NAMES else v for v in p]
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in re_im):
        raise Refused("a malformed complex number")
    return complex(*re_im)


def _literal(val: Any, aval: Any) -> Any:
    """A literal as bind expects it: weak-typed Python scalars stay Python scalars."""
    if getattr(aval, "weak_type", False) and isinstance(val, np.generic):
        return val.item()
    return val



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

