"""A traced program as pure data (run by the tracer, where student code lives).

``encode(traced, student_files)`` turns the student's traced function into a
JSON-ready document (``schema`` says what it may hold). Values are encoded by
type, each by an explicit rule; anything else (a Python callable, an unknown
class) raises ``Refused`` naming it. Bodies of jit, custom_jvp/vjp and remat
are kept and inlined on rebuild; a few equations are kept in the form the
document can hold (``forms``: high-level primitives, linear solves, composites,
checks, reduce); a primitive the child would not rebind (``registry.kind``) and
host callbacks are refused wherever they occur, naming the student's line and
the call it made there, with what to write instead (``names.instead``). Source
locations in the student's own files are kept (file name, line, function) so the
race detector can still name the line.
"""
from __future__ import annotations

import base64
import dataclasses
import enum
import importlib
import math
import os
from typing import Any

import jax
import numpy as np
from jax._src import core as jax_core, dtypes as jax_dtypes, source_info_util

from .. import release
from . import forms, jaxprs, names, registry, schema
from .schema import Refused

_FLAT = importlib.import_module(release.FLAT_TREES) if release.FLAT_TREES else None

INT_RANGE = 1 << 63


class Leaf:
    """A placeholder for the i-th leaf of a tree definition."""

    def __init__(self, index: int):
        self.index = index


def _registries() -> dict:
    from jax._src import tree_util
    return {"default": tree_util.default_registry, "tracing": tree_util.tracing_registry}


REGISTRIES = _registries()


def _mesh_types() -> tuple[type, type]:
    from jax._src.frozen_dict import FrozenDict
    from jax._src.pallas.mosaic import core as tcore
    return tcore.TensorCoreMesh, FrozenDict


_TENSORCORE_MESH, _FROZEN_DICT = _mesh_types()
_CLASS_KEY = {cls: key for key, cls in registry.CLASSES.items()}


def _part(v: float) -> Any:
    """A complex number's part: a float, or a non-finite one's name."""
    v = float(v)
    return v if math.isfinite(v) else repr(v)


def dtype_name(dtype: Any) -> str:
    name = str(dtype) if isinstance(dtype, np.dtype) else str(getattr(dtype, "name", dtype))
    if name not in registry.DTYPES:
        raise Refused(f"dtype {name!r} is not one the grader rebuilds")
    return name


class Encoder:
    def __init__(self, student_files: set[str]):
        self.ids: dict[Any, int] = {}
        self.sources: list[list] = []
        self._source_index: dict[tuple, int] = {}
        self.student_files = student_files
        self.array_bytes = 0

    # -- jaxprs -------------------------------------------------------------
    def closed(self, closed) -> dict:
        return {"jaxpr": self.jaxpr(closed.jaxpr), "consts": [self.value(c) for c in closed.consts]}

    def jaxpr(self, jaxpr) -> dict:
        out = {"constvars": [self.var(v) for v in jaxpr.constvars],
               "invars": [self.var(v) for v in jaxpr.invars],
               "eqns": [self.eqn(e) for e in jaxpr.eqns],
               "outvars": [self.atom(a) for a in jaxpr.outvars]}
        names = getattr(jaxpr.debug_info, "arg_names", None)
        if names and len(names) == len(jaxpr.invars) and all(isinstance(n, str) for n in names):
            out["names"] = [n[:80] for n in names]    # interpreter messages name operands by them
        return out

    def var(self, v) -> dict:
        self.ids.setdefault(v, len(self.ids))
        return {"v": self.ids[v], "aval": self.value(v.aval)}

    def atom(self, a) -> dict:
        if isinstance(a, jax_core.Literal):
            return {"lit": self.value(a.val), "aval": self.value(a.aval)}
        if a not in self.ids:
            raise Refused("a variable is used before it is defined")
        return {"v": self.ids[a]}

    def eqn(self, e) -> dict:
        try:
            return self._eqn(e)
        except Refused as r:
            raise self._placed(r, e) from None

    def _eqn(self, e) -> dict:
        name = e.primitive.name
        if name in schema.HOST_CALLBACKS:
            raise Refused(f"host callback '{name}': a kernel may not call back into Python")
        call = forms.as_call(e)
        if call is not None:
            body, operands = call
            params = [[names.INLINED[forms.CALL], self.param(name, "body", body)]]
            name = forms.CALL
        elif registry.kind(name) is None:
            raise Refused(f"primitive '{name}' is not one the grader rebuilds: {names.instead(name)}")
        else:
            operands = e.invars
            params = self._params(name, e)
        return {"p": name, "in": [self.atom(a) for a in operands], "out": [self.var(v) for v in e.outvars],
                "params": params, "src": self.source(e.source_info)}

    def _params(self, name: str, e) -> list:
        if name in names.INLINED:
            key = names.INLINED[name]
            return [[key, self.param(name, key, e.params[key])]]
        items = forms.check_params(e) if name == "check" else forms.reduce_params(e) if name == "reduce" \
            else [[k, False if k == "interpret" and name in release.KERNEL_CALLS else v]
                  for k, v in sorted(e.params.items())]
        return [[k, self.param(name, k, v)] for k, v in items]

    def _placed(self, r: Refused, e) -> Refused:
        """A refusal with the student's line and the call it made, once (the
        innermost equation that has one: a call of the student's into JAX)."""
        if getattr(r, "placed", False):
            return r
        at = forms.called_at(e.source_info, self.student_files)
        if at is None:
            return r
        file, line, called = at
        placed = Refused(f"{r} (at {file}:{line}" + (f", calling {called}" if called else "") + ")")
        placed.placed = True
        return placed

    def param(self, prim: str, key: str, value: Any) -> Any:
        try:
            return self.value(value)
        except Refused as r:
            raise Refused(f"{r} (parameter '{key}' of '{prim}')") from None

    def source(self, info) -> int | None:
        """The student's own line behind an equation, if it is in their files."""
        frame = next((f for f in source_info_util.user_frames(info.traceback)
                      if os.path.realpath(f.file_name) in self.student_files), None)
        if frame is None:
            return None
        key = (os.path.basename(frame.file_name), int(frame.start_line), str(frame.function_name))
        if key not in self._source_index:
            self._source_index[key] = len(self.sources)
            self.sources.append(list(key))
        return self._source_index[key]

    # -- values -------------------------------------------------------------
    def value(self, x: Any) -> Any:
        if x is None or isinstance(x, (bool, str)):
            return x
        if isinstance(x, int) and not isinstance(x, enum.Enum):
            if not -INT_RANGE <= x < INT_RANGE:
                raise Refused(f"integer {x} out of range")
            return x
        if isinstance(x, float):
            # float(x): jax 0.12's literals are float subclasses (TypedFloat) whose repr
            # is not a float's; the literal's dtype travels in its aval.
            return float(x) if math.isfinite(x) else {"f": repr(float(x))}
        if isinstance(x, Leaf):
            return {"leaf": x.index}
        named = registry.named_key(x)
        if named is not None:
            return {"e": list(named)}
        if isinstance(x, enum.Enum):
            raise Refused(f"enum {type(x).__module__}.{type(x).__qualname__}")
        if isinstance(x, complex):
            return {"z": [_part(x.real), _part(x.imag)]}
        if isinstance(x, tuple) and hasattr(x, "_fields"):
            return self._instance(x, [(n, getattr(x, n)) for n in x._fields])
        if isinstance(x, tuple):
            return {"t": [self.value(v) for v in x]}
        if isinstance(x, list):
            return {"l": [self.value(v) for v in x]}
        if isinstance(x, dict):
            return {"d": [[self.value(k), self.value(v)] for k, v in x.items()]}
        return self._object(x)

    def _object(self, x: Any) -> Any:
        if _FLAT is not None and isinstance(x, _FLAT.FlatTree):
            return self._flat(x)
        if jaxprs.is_closed(x):
            return {"cjx": self.closed(x)}
        if jaxprs.is_open(x):
            return {"jx": self.jaxpr(x)}
        if isinstance(x, jax.tree_util.PyTreeDef):
            return self._tree(x)
        if isinstance(x, np.generic):
            if x.dtype.kind == "c":
                return {"s": [dtype_name(x.dtype), [_part(x.real), _part(x.imag)]]}
            if x.dtype.kind == "f" and not math.isfinite(float(x)):
                return self._array(np.asarray(x))      # a NaN or an infinity: its bits
            return {"s": [dtype_name(x.dtype), x.item() if x.dtype.kind != "f" else float(x)]}
        if isinstance(x, (np.ndarray, jax.Array)):
            return self._array(np.asarray(x))
        if isinstance(x, (np.dtype, jax_dtypes.ExtendedDType)):
            return {"dt": dtype_name(x)}
        if isinstance(x, type) and isinstance(getattr(x, "dtype", None), np.dtype):
            return {"dt": dtype_name(x.dtype)}     # a scalar type (jnp.float32) for its dtype
        if isinstance(x, _TENSORCORE_MESH):
            return self._mesh(x)
        if isinstance(x, _FROZEN_DICT):
            return {"d": [[self.value(k), self.value(v)] for k, v in x.items()]}
        if type(x).__name__ == "AbstractRef":
            return {"ref": [self.value(x.inner_aval), self.value(x.memory_space)]}
        if type(x) is jax_core.ShapedArray:
            return {"sa": [[int(d) for d in x.shape], {"dt": dtype_name(x.dtype)}, bool(x.weak_type)]}
        if dataclasses.is_dataclass(x) and type(x) in _CLASS_KEY:
            return self._instance(x, [(f.name, getattr(x, f.name)) for f in dataclasses.fields(x) if f.init])
        if callable(x):
            raise Refused(f"a Python function ({getattr(x, '__qualname__', type(x).__name__)})")
        raise Refused(f"a value of type {type(x).__module__}.{type(x).__qualname__}")

    def _mesh(self, mesh) -> dict:
        """A TensorCoreMesh by its one axis (name, cores): its fields differ by release."""
        (axis, cores), = mesh.shape.items()
        return {"dc": ["TensorCoreMesh", [["axis_name", self.value(axis)], ["num_cores", self.value(int(cores))]]]}

    def _flat(self, x) -> dict:
        if isinstance(x, _FLAT.FTTuple):
            return {"ftt": [self._flat(e) for e in x.elts]}
        return {"ftn": len(x)}

    def _tree(self, treedef) -> dict:
        """A tree definition as its structure with numbered leaves, and the
        registry that made it (pallas flattens refs with JAX's tracing registry)."""
        obj = jax.tree_util.tree_unflatten(treedef, [Leaf(i) for i in range(treedef.num_leaves)])
        for name, trees in REGISTRIES.items():
            if trees.flatten(obj)[1] == treedef:
                return {"tree": [name, self.value(obj)]}
        raise Refused("a tree definition from an unknown registry")

    def _instance(self, x: Any, fields: list[tuple[str, Any]]) -> dict:
        key = _CLASS_KEY.get(type(x))
        if key is None:
            raise Refused(f"a value of type {type(x).__module__}.{type(x).__qualname__}")
        return {"dc": [key, [[name, self.value(v)] for name, v in fields]]}

    def _array(self, a: np.ndarray) -> dict:
        self.array_bytes += a.nbytes
        if self.array_bytes > schema.MAX_ARRAY_BYTES:
            raise Refused(f"constants over {schema.MAX_ARRAY_BYTES} bytes")
        data = base64.b64encode(np.ascontiguousarray(a).tobytes()).decode("ascii")
        return {"a": [dtype_name(a.dtype), [int(d) for d in a.shape], data]}


def encode(traced, student_files: set[str]) -> dict:
    """The document for one traced function (``rung.Traced``)."""
    enc = Encoder(student_files)
    program = enc.closed(traced.closed)
    out_tree = enc.value(traced.out_tree)
    return {"format": schema.FORMAT, "program": program, "out_tree": out_tree, "sources": enc.sources}
