"""The serialized kernel: what a traced program may contain (pure data, no JAX).

The tracer (student code) writes a traced program as JSON; the grader's
child rebuilds it with this release's JAX (``rebuild``) and never runs the
student's Python. Everything here is an allow-list: a primitive, a class or an
enum that is not named below is refused with a message that names it. The
parent runs ``check`` (structure, sizes, depth, names) before the program
reaches the grader's child; ``rebuild`` checks every value again as it
decodes it.

Document format (version 1)::

    {"format": 1, "program": CLOSED, "sources": [[file, line, function], ...]}
    CLOSED = {"jaxpr": JAXPR, "consts": [VALUE, ...]}
    JAXPR  = {"constvars": [VAR], "invars": [VAR], "outvars": [ATOM], "eqns": [EQN]}
    VAR    = {"v": int, "aval": VALUE}          ATOM = VAR-ref {"v": int} | {"lit": VALUE, "aval": VALUE}
    EQN    = {"p": primitive, "in": [ATOM], "out": [VAR], "params": {name: VALUE}, "src": int | null}
    VALUE  = null | bool | int | str | finite float | a tagged object
             ({"dt": dtype}, {"e": [enum, name]}, {"dc": [class, ...]}, ...: see serial)
"""
from __future__ import annotations

import json
from typing import Any

FORMAT = 1

# -- limits: a document past any of these is not the grader's to rebuild ----
MAX_DOCUMENT_BYTES = 16 * 1024 * 1024
MAX_DEPTH = 160                  # nesting of JSON containers
MAX_EQNS = 200_000               # over the whole program, sub-jaxprs included
MAX_ARRAY_BYTES = 8 * 1024 * 1024   # constants, in all
MAX_ELEMENTS = 1 << 30           # elements of any one value's shape
MAX_RANK = 8
MAX_INT = 1 << 63                # every integer anywhere: |v| < 2^63, as serial writes them
MAX_SOURCES = 10_000             # distinct source lines named
MAX_SOURCE_LINE = 1_000_000      # the child builds a function at that line: bounded before it does
MAX_NAME = 200                   # a source's file and function names

# -- primitives ---------------------------------------------------------------
# Rebound as they are, with their parameters decoded.
FIRST_ORDER = frozenset("""
abs acos acosh add and argmax argmin asin asinh atan atan2 atanh bitcast_convert_type
broadcast_in_dim cbrt ceil clamp clz concatenate convert_element_type copy cos cosh cumlogsumexp
cummax cummin cumprod cumsum digamma div dot_general dynamic_slice dynamic_update_slice eq erf
erf_inv erfc exp exp2 expm1 floor ge gt imag integer_pow iota is_finite le lgamma log log1p
logistic lt max min mul mulhi ne neg nextafter not or pad population_count pow real
reduce_and reduce_max reduce_min reduce_or reduce_precision reduce_prod reduce_sum reduce_xor rem
platform_index reshape rev round rsqrt select_n shift_left shift_right_arithmetic shift_right_logical sign sin
sinh slice sort split sqrt square squeeze sub tan tanh top_k transpose xor
gather scatter scatter-add reduce_window_sum reduce_window_max reduce_window_min
get swap addupdate
program_id num_programs multiple_of masked_load masked_swap semaphore_signal semaphore_wait
semaphore_read delay reciprocal debug_print
dma_start dma_wait bitcast roll stochastic_round prng_seed prng_random_bits pack_elementwise
unpack_elementwise stop_gradient
axis_index
""".split())
# Rebound with their sub-programs rebuilt first.
# mpmd_map: pl.kernel's (and 0.12's pl.core_map's) kernel over a TensorCoreMesh,
# rebuilt as the pallas_call JAX lowers it to on CPU (rebuild._mpmd_map).
HIGHER_ORDER = frozenset({"cond", "while", "scan", "run_scoped", "pallas_call", "mpmd_map"})
# Replaced by their bodies: a call boundary changes nothing the grader measures.
INLINED = {"jit": "jaxpr", "pjit": "jaxpr", "closed_call": "call_jaxpr", "core_call": "call_jaxpr",
           "custom_jvp_call": "call_jaxpr", "custom_vjp_call": "call_jaxpr",
           "remat2": "jaxpr", "checkpoint": "jaxpr"}
# Host callbacks run Python the grader would have to take from the student.
HOST_CALLBACKS = frozenset({"pure_callback", "io_callback", "debug_callback"})
PRIMITIVES = FIRST_ORDER | HIGHER_ORDER | frozenset(INLINED)

# -- values -------------------------------------------------------------------
DTYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                    "float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2",
                    "semaphore", "dma_sem", "barrier_semaphore"})
# Dataclass-like classes a parameter may hold, by the key the document names them with.
CLASSES = frozenset({"TransformedRef", "Blocked", "Squeezed", "Element", "BoundedSlice", "Buffered", "GridMapping",
                     "BlockMapping", "TPUCompilerParams", "NDIndexer", "Slice",
                     "GatherDimensionNumbers", "GatherScatterMode", "ScatterDimensionNumbers",
                     "TensorCoreMesh"})
ENUMS = frozenset({"MemorySpace", "TPUMemorySpace", "SemaphoreType", "DeviceIdType", "Precision",
                   "RoundingMethod", "GridDimensionSemantics", "GatherScatterMode", "KernelType"})


class Refused(ValueError):
    """A document the grader will not rebuild: the message names what and where."""


def _walk(value: Any, depth: int, counts: dict) -> None:
    if depth > MAX_DEPTH:
        raise Refused(f"the program nests deeper than {MAX_DEPTH} levels")
    if isinstance(value, list):
        for v in value:
            _walk(v, depth + 1, counts)
    elif isinstance(value, dict):
        if "p" in value and "in" in value and "out" in value:
            counts["eqns"] += 1
            prim = value["p"]
            if prim in HOST_CALLBACKS:
                raise Refused(f"host callback '{prim}': a kernel may not call back into Python")
            if prim not in PRIMITIVES:
                raise Refused(f"primitive {str(prim)[:60]!r} is not one the grader rebuilds")
        for k, v in value.items():
            if k == "dt" and v not in DTYPES:
                raise Refused(f"dtype {str(v)[:40]!r} is not one the grader rebuilds")
            if k == "dc" and (not isinstance(v, list) or not v or v[0] not in CLASSES):
                raise Refused(f"class {str(v[0] if isinstance(v, list) and v else v)[:60]!r} in a "
                              "parameter is not one the grader rebuilds")
            if k == "e" and (not isinstance(v, list) or len(v) != 2 or v[0] not in ENUMS):
                raise Refused(f"enum {str(v)[:60]!r} in a parameter is not one the grader rebuilds")
            _walk(v, depth + 1, counts)
    elif isinstance(value, float) and value != value:
        raise Refused("a bare NaN in the program")
    elif isinstance(value, int) and not isinstance(value, bool) and not -MAX_INT <= value < MAX_INT:
        raise Refused(f"an integer out of range ({str(value)[:40]}...)")
    if counts["eqns"] > MAX_EQNS:
        raise Refused(f"the program has more than {MAX_EQNS} equations")


def loads(data: bytes) -> dict:
    """Parse and check a document (the parent's check, and the child's first step)."""
    if len(data) > MAX_DOCUMENT_BYTES:
        raise Refused(f"the traced program is {len(data)} bytes; the limit is {MAX_DOCUMENT_BYTES}")
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as e:
        raise Refused(f"the traced program is not valid JSON ({type(e).__name__})") from None
    check(doc)
    return doc


def check(doc: Any) -> None:
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("program"), dict):
        raise Refused(f"not a traced program of format {FORMAT}")
    _walk(doc, 0, {"eqns": 0})
    _check_sources(doc.get("sources", []))


def _check_sources(sources: Any) -> None:
    """Each source is [file, line, function] in the student's files: bounded here,
    before the grader's child builds a traceback at that line."""
    if not isinstance(sources, list) or len(sources) > MAX_SOURCES:
        raise Refused(f"the program's source table must be a list of at most {MAX_SOURCES} entries")
    for s in sources:
        ok = (isinstance(s, list) and len(s) == 3 and isinstance(s[0], str) and isinstance(s[2], str)
              and len(s[0]) <= MAX_NAME and len(s[2]) <= MAX_NAME and isinstance(s[1], int)
              and not isinstance(s[1], bool) and 1 <= s[1] <= MAX_SOURCE_LINE)
        if not ok:
            raise Refused(f"a source entry must be [file, line 1..{MAX_SOURCE_LINE}, function] with names "
                          f"of at most {MAX_NAME} characters")
