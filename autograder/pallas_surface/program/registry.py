"""What a traced program's names stand for, shared by the tracer's ``serial`` and
the child's ``rebuild``: the primitives by their registered names, the dtypes,
the classes and the named values (enums, PRNG implementations) a parameter may hold.

Primitives are found, not listed: every ``Primitive`` JAX defines in one of its
array modules (``ARRAY_MODULES``) is rebindable by its name, except those
``names.NEVER`` names. How one is rebound (reviewed, generic or by a rule of
its own) is ``kind``'s answer; the generic rule's conditions (typed parameters,
no effect) are checked as each equation is rebound (``rebuild``).
"""
from __future__ import annotations

import enum
import sys
from typing import Any, Mapping

import ml_dtypes
import numpy as np
from jax._src import core as jax_core

from . import names, schema

# The modules whose primitives compute on arrays, refs and keys, and nothing else:
# lax (its special functions, FFT, linear algebra, windows, control flow,
# collectives), random, state, Pallas and Pallas TPU, checkify's check, stop_gradient's
# home and jax.debug.print's. Not: callbacks, FFI, custom calls, the TPU interpreter's
# own primitives, device placement, export, tokens.
ARRAY_MODULES = ("jax._src.lax", "jax._src.random", "jax._src.state.primitives", "jax._src.pallas.primitives",
                 "jax._src.pallas.mosaic.primitives", "jax._src.pallas.pallas_call", "jax._src.pallas.mpmd",
                 "jax._src.ad_util", "jax._src.debugging", "jax._src.checkify")


def _array_module(name: str) -> bool:
    return any(name == m or name.startswith(m + ".") for m in ARRAY_MODULES)


def _imported() -> None:
    """Every module a student's program can reach a primitive through."""
    import jax.numpy  # noqa: F401
    from jax._src import checkify  # noqa: F401
    from jax._src.lax import fft, linalg  # noqa: F401
    from jax._src.random import prng  # noqa: F401
    from jax.experimental import pallas  # noqa: F401
    from jax.experimental.pallas import tpu  # noqa: F401


def _primitives() -> dict[str, jax_core.Primitive]:
    _imported()
    found: dict[str, jax_core.Primitive] = {}
    for module in ARRAY_MODULES:
        for mname in sorted(m for m in list(sys.modules) if m == module or m.startswith(module + ".")):
            for v in list(vars(sys.modules[mname]).values()):
                if isinstance(v, jax_core.Primitive) and names.named(v.name) and v.name not in names.NEVER:
                    found.setdefault(v.name, v)
    return found


PRIMITIVES = _primitives()


def kind(name: str) -> str | None:
    """How the child rebinds ``name``: "higher-order" (an explicit rule with its
    sub-programs), "inlined", "special" (a rule of its own), "reviewed" (bound as
    is), "generic" (bound by name if its parameters are data and it has no
    effect); None: not at all."""
    if name in names.NEVER:
        return None
    if name in names.INLINED:
        return "inlined"
    if name in names.HIGHER_ORDER:
        return "higher-order"
    if name in names.SPECIAL:
        return "special"
    if name not in PRIMITIVES:
        return None
    return "reviewed" if name in names.FIRST_ORDER else "generic"


# -- dtypes ---------------------------------------------------------------------
def _prng_impls() -> dict[str, Any]:
    from jax._src.random import prng
    return dict(prng.prngs)


PRNG_IMPLS = _prng_impls()


def _dtypes() -> dict[str, Any]:
    from jax._src.pallas import core as pcore
    from jax._src.pallas.mosaic import core as tcore
    from jax._src.random import prng
    special = {"bfloat16": ml_dtypes.bfloat16, "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
               "float8_e5m2": ml_dtypes.float8_e5m2, "int4": ml_dtypes.int4, "uint4": ml_dtypes.uint4}
    out: dict[str, Any] = {n: np.dtype(special.get(n, n)) for n in schema.DTYPES
                           if n not in ("semaphore", "dma_sem", "barrier_semaphore")}
    out.update(semaphore=pcore.Semaphore(), barrier_semaphore=pcore.BarrierSemaphore(), dma_sem=tcore.DMASemaphore())
    for impl in PRNG_IMPLS.values():
        key = prng.KeyTy(impl)
        if schema.dtype_name_ok(key.name):
            out.setdefault(key.name, key)
    return out


DTYPES = _dtypes()


# -- classes and named values ------------------------------------------------------
def _classes() -> dict[str, type]:
    """The dataclass-like classes a parameter may hold, by their document key."""
    from jax._src import indexing as jindex
    from jax._src.lax import convolution, lax as jlax, slicing
    from jax._src.pallas import core as pcore
    from jax._src.pallas.mosaic import core as tcore
    from jax._src.state import indexing as sindex, types as stypes
    classes = {"TransformedRef": stypes.TransformedRef, "Blocked": pcore.Blocked,
               "Squeezed": pcore.Squeezed, "Element": pcore.Element,
               "BoundedSlice": pcore.BoundedSlice, "Buffered": pcore.Buffered,
               "GridMapping": pcore.GridMapping, "BlockMapping": pcore.BlockMapping,
               "TPUCompilerParams": tcore.CompilerParams, "NDIndexer": sindex.NDIndexer,
               "Slice": jindex.Slice, "GatherDimensionNumbers": slicing.GatherDimensionNumbers,
               "ScatterDimensionNumbers": slicing.ScatterDimensionNumbers,
               "ConvDimensionNumbers": convolution.ConvDimensionNumbers,
               "RaggedDotDimensionNumbers": jlax.RaggedDotDimensionNumbers}
    assert set(classes) <= schema.CLASSES
    return classes


CLASSES = _classes()


def _named_values() -> dict[str, Mapping[str, Any]]:
    """Values a parameter names by key and member: the enums Pallas and lax parameters
    take (by short keys, as the first documents did), every other enum one of
    ``ARRAY_MODULES`` defines (by its module and name), and the PRNG
    implementations (by their registered names)."""
    from jax._src.lax import lax as jlax, slicing
    from jax._src.pallas import core as pcore, primitives as pprims
    from jax._src.pallas.mosaic import core as tcore
    short = {"MemorySpace": pcore.MemorySpace, "TPUMemorySpace": tcore.MemorySpace,
             "SemaphoreType": tcore.SemaphoreType, "DeviceIdType": pprims.DeviceIdType,
             "Precision": jlax.Precision, "RoundingMethod": jlax.RoundingMethod,
             "GridDimensionSemantics": tcore.GridDimensionSemantics,
             "GatherScatterMode": slicing.GatherScatterMode}
    out: dict[str, Mapping[str, Any]] = {k: dict(cls.__members__) for k, cls in short.items()}
    taken = set(short.values())
    for mname in sorted(m for m in list(sys.modules) if _array_module(m)):
        for v in list(vars(sys.modules[mname]).values()):
            if isinstance(v, type) and issubclass(v, enum.Enum) and v not in taken and v.__module__ == mname:
                key = f"{v.__module__}.{v.__qualname__}"
                if schema.enum_name_ok(key):
                    out[key] = dict(v.__members__)
                    taken.add(v)
    out["PRNGImpl"] = PRNG_IMPLS
    assert set(short) <= schema.ENUMS
    return out


NAMED = _named_values()


def named_key(x: Any) -> tuple[str, str] | None:
    """(key, member) of a named value, or None when ``x`` is not one."""
    if isinstance(x, enum.Enum):
        for key, members in NAMED.items():
            if members.get(x.name) is x:
                return key, x.name
        return None
    for name, impl in PRNG_IMPLS.items():
        if x is impl:
            return "PRNGImpl", name
    return None
