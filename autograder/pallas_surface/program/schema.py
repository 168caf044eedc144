"""The serialized kernel: what a traced program may contain (pure data, no JAX).

The tracer (student code) writes a traced program as JSON; the grader's
child rebuilds it with this release's JAX (``rebuild``) and never runs the
student's Python. Everything here is an allow-list: a primitive, a class or an
enum that is not named below is refused with a message that names it. The
parent runs ``check`` (structure, sizes, depth, names) before the program
reaches the grader's child; ``rebuild`` checks every value again as it
decodes it.

Primitives are named by the grammar only (``names.named``); the child decides
which it rebinds (``registry``). Document format (version 1)::

    {"format": 1, "program": CLOSED, "sources": [[file, line, function], ...]}
    CLOSED = {"jaxpr": JAXPR, "consts": [VALUE, ...]}
    JAXPR  = {"constvars": [VAR], "invars": [VAR], "outvars": [ATOM], "eqns": [EQN], "names"?: [str]}
    VAR    = {"v": int, "aval": VALUE}          ATOM = VAR-ref {"v": int} | {"lit": VALUE, "aval": VALUE}
    EQN    = {"p": primitive, "in": [ATOM], "out": [VAR], "params": {name: VALUE}, "src": int | null}
    VALUE  = null | bool | int | str | finite float | a tagged object of one key:
             {"t"|"l": [VALUE]}, {"d": [[VALUE, VALUE]]}, {"f": "nan"|"inf"|"-inf"},
             {"s": [dtype, number | COMPLEX]}, {"z": COMPLEX}, {"a": [dtype, shape, base64]}, {"dt": dtype},
             {"sa": [shape, {"dt": dtype}, bool]}, {"ref": [VALUE, VALUE]}, {"e": [enum, name]},
             {"leaf": int}, {"dc": [class, [[field, VALUE]]]}, {"tree": [registry, VALUE]},
             {"jx": JAXPR}, {"cjx": CLOSED}, {"ftt": [{"ftt"|"ftn": ...}]}, {"ftn": int}
    COMPLEX = [real, imaginary], each a finite number or "nan"|"inf"|"-inf"

Each jaxpr is its own scope: a variable is defined once (an input, a constant
or an equation's output) before it is read. ``check`` holds a document to all of
this; a document it passes is one every analysis of the parent can read.
"""
from __future__ import annotations

import json
import re
from typing import Any

from . import names

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
# Which names the child rebinds, and how, is ``names``'s (and the child's
# ``registry``): the parent holds a name to the grammar only (``names.named``),
# refuses host callbacks by name, and leaves the rest to the child, which knows
# which primitives this release defines.
FIRST_ORDER, HIGHER_ORDER, INLINED = names.FIRST_ORDER, names.HIGHER_ORDER, names.INLINED
WORK = names.WORK       # what computes on data outside a kernel (a spec's [structure] allow may name it)
HOST_CALLBACKS = names.HOST_CALLBACKS

# Outside every kernel, data may only be moved and handed to kernels
# (``pallas_surface.outside``). What an assignment's ``[structure] allow`` may
# name as glue it allows besides: a first-order primitive computing on data,
# or one of these kinds (a position or a decision read from data). A ref
# outside a kernel is never glue.
OUTSIDE_KINDS = ("data-index", "data-control")

# -- values -------------------------------------------------------------------
DTYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                    "float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2",
                    "complex64", "complex128", "int4", "uint4", "semaphore", "dma_sem", "barrier_semaphore"})
# A PRNG key's dtype: key<tag> (jax.random.key's is key<fry>).
KEY_DTYPE = re.compile(r"key<[A-Za-z0-9_]{1,32}>")
COMPLEX = frozenset({"complex64", "complex128"})
# Dataclass-like classes a parameter may hold, by the key the document names them with.
CLASSES = frozenset({"TransformedRef", "Blocked", "Squeezed", "Element", "BoundedSlice", "Buffered", "GridMapping",
                     "BlockMapping", "TPUCompilerParams", "NDIndexer", "Slice",
                     "GatherDimensionNumbers", "GatherScatterMode", "ScatterDimensionNumbers",
                     "TensorCoreMesh", "ConvDimensionNumbers", "RaggedDotDimensionNumbers"})
ENUMS = frozenset({"MemorySpace", "TPUMemorySpace", "SemaphoreType", "DeviceIdType", "Precision",
                   "RoundingMethod", "GridDimensionSemantics", "GatherScatterMode", "KernelType", "PRNGImpl"})
# Any other enum one of JAX's array modules defines, by its module and name
# (jax._src.lax.fft.FftType): the child finds it among those modules' enums.
ENUM_PATH = re.compile(r"jax\._src(\.[A-Za-z_][A-Za-z0-9_]{0,60}){1,8}")


def dtype_name_ok(name: Any) -> bool:
    return isinstance(name, str) and (name in DTYPES or KEY_DTYPE.fullmatch(name) is not None)


def enum_name_ok(key: Any) -> bool:
    return isinstance(key, str) and (key in ENUMS or ENUM_PATH.fullmatch(key) is not None)


class Refused(ValueError):
    """A document the grader will not rebuild: the message names what and where."""


# -- the document's grammar (the module docstring), checked in full --------
# Every analysis the parent makes of a document (its canonical form, its
# likeness) reads it by this grammar: a document the check passes cannot make
# one of them fail, whatever a forged tracer writes.
DOC_KEYS = frozenset({"format", "program", "out_tree", "sources"})
JAXPR_KEYS = frozenset({"constvars", "invars", "eqns", "outvars"})
EQN_KEYS = frozenset({"p", "in", "out", "params", "src"})
FLOAT_NAMES = frozenset({"nan", "inf", "-inf"})
MAX_ARG_NAME = 80


class _Document:
    """One document checked against the grammar: every node's shape, every
    name on its allow-list, every variable defined once in its jaxpr before
    it is read, every bound above."""

    def __init__(self, sources: int):
        self.sources = sources
        self.eqns = 0

    @staticmethod
    def deeper(depth: int) -> int:
        if depth > MAX_DEPTH:
            raise Refused(f"the program nests deeper than {MAX_DEPTH} levels")
        return depth + 1

    def closed(self, c: Any, depth: int) -> None:
        if not isinstance(c, dict) or set(c) != {"jaxpr", "consts"} or not isinstance(c["consts"], list):
            raise Refused("a closed program must be {jaxpr, consts}")
        d = self.deeper(depth)
        for v in c["consts"]:
            self.value(v, d + 1)
        self.jaxpr(c["jaxpr"], d)

    def jaxpr(self, j: Any, depth: int) -> None:
        if not isinstance(j, dict) or not JAXPR_KEYS <= set(j) <= JAXPR_KEYS | {"names"} \
                or not all(isinstance(j[k], list) for k in JAXPR_KEYS):
            raise Refused("a program must be {constvars, invars, eqns, outvars} lists")
        d = self.deeper(depth) + 1
        scope: set[int] = set()
        for v in j["constvars"] + j["invars"]:
            self.define(v, scope, d)
        names = j.get("names")
        if names is not None and not (isinstance(names, list) and len(names) == len(j["invars"]) and all(
                isinstance(n, str) and len(n) <= MAX_ARG_NAME for n in names)):
            raise Refused("a program's argument names must be one string of at most "
                          f"{MAX_ARG_NAME} characters per input")
        for e in j["eqns"]:
            self.eqn(e, scope, d)
        for a in j["outvars"]:
            self.atom(a, scope, d)

    def define(self, v: Any, scope: set, depth: int) -> None:
        if not isinstance(v, dict) or set(v) != {"v", "aval"} or not _index(v["v"]):
            raise Refused("a variable must be {v: a number, aval}")
        if v["v"] in scope:
            raise Refused("a variable is defined twice in one program")
        scope.add(v["v"])
        self.value(v["aval"], self.deeper(depth))

    def atom(self, a: Any, scope: set, depth: int) -> None:
        if isinstance(a, dict) and set(a) == {"v"}:
            if not _index(a["v"]) or a["v"] not in scope:
                raise Refused("a variable is read before its program defines it")
        elif isinstance(a, dict) and set(a) == {"lit", "aval"}:
            d = self.deeper(depth)
            self.value(a["lit"], d)
            self.value(a["aval"], d)
        else:
            raise Refused("an operand must be {v} or {lit, aval}")

    def eqn(self, e: Any, scope: set, depth: int) -> None:
        self.eqns += 1
        if self.eqns > MAX_EQNS:
            raise Refused(f"the program has more than {MAX_EQNS} equations")
        if not isinstance(e, dict) or set(e) != EQN_KEYS:
            raise Refused("an equation must be {p, in, out, params, src}")
        prim = e["p"]
        if _named(prim, HOST_CALLBACKS):
            raise Refused(f"host callback '{prim}': a kernel may not call back into Python")
        if not names.named(prim) or prim in names.NEVER:
            raise Refused(f"primitive {str(prim)[:60]!r} is not one the grader rebuilds")
        src = e["src"]
        if src is not None and not (_index(src) and src < self.sources):
            raise Refused("an equation's source must be null or an entry of the source table")
        if not all(isinstance(e[k], list) for k in ("in", "out", "params")):
            raise Refused("an equation's in, out and params must be lists")
        d = self.deeper(depth) + 1
        for a in e["in"]:
            self.atom(a, scope, d)
        self.pairs(e["params"], d - 1, keys=str)
        for v in e["out"]:
            self.define(v, scope, d)

    def pairs(self, items: Any, depth: int, keys: type | None = None) -> None:
        """A list of [key, VALUE] pairs (string keys where ``keys`` says so)."""
        d = self.deeper(depth)
        for item in items:
            if not (isinstance(item, list) and len(item) == 2) or keys is not None and not isinstance(item[0], keys):
                raise Refused("a table must be a list of [key, value] pairs" + (" with string keys" if keys else ""))
            if keys is None:
                self.value(item[0], self.deeper(d))
            self.value(item[1], self.deeper(d))

    def value(self, x: Any, depth: int) -> None:
        if x is None or isinstance(x, (bool, str)):
            return
        if isinstance(x, float):
            if not _number(x):
                raise Refused("a bare NaN in the program")
            return
        if isinstance(x, int):
            if not _number(x):
                raise Refused(f"an integer out of range ({str(x)[:40]}...)")
            return
        if not (isinstance(x, dict) and len(x) == 1):
            raise Refused("a value must be a scalar, a string or one tagged object")
        (tag, body), = x.items()
        d = self.deeper(depth)
        if tag in SCALAR_TAGS:
            self.scalar(tag, body)
        elif tag in ("t", "l"):
            for v in _list(body, tag):
                self.value(v, self.deeper(d))
        elif tag == "d":
            self.pairs(_list(body, tag), d)
        elif tag in ("ref", "tree"):
            if not (isinstance(body, list) and len(body) == 2) or tag == "tree" and not isinstance(body[0], str):
                raise Refused(f"a malformed {tag!r} value")
            for v in body[int(tag == "tree"):]:
                self.value(v, self.deeper(d))
        elif tag == "dc":
            self.instance(body, d)
        elif tag == "ftt":
            self.flat(body, d)
        elif tag == "jx":
            self.jaxpr(body, d)
        elif tag == "cjx":
            self.closed(body, d)
        else:
            raise Refused(f"an unknown tag {str(tag)[:20]!r} in the program")

    def instance(self, body: Any, depth: int) -> None:
        if not (isinstance(body, list) and body and _named(body[0], CLASSES)):
            raise Refused(f"class {str(body[0] if isinstance(body, list) and body else body)[:60]!r} in a "
                          "parameter is not one the grader rebuilds")
        if len(body) != 2 or not isinstance(body[1], list):
            raise Refused(f"a malformed {body[0]!r} value")
        self.pairs(body[1], self.deeper(depth), keys=str)

    @staticmethod
    def scalar(tag: str, body: Any) -> None:
        """Tags whose bodies hold no value: floats, dtypes, enums, arrays, shapes, leaves."""
        if tag == "e":
            if not (isinstance(body, list) and len(body) == 2 and enum_name_ok(body[0]) and isinstance(body[1], str)):
                raise Refused(f"enum {str(body)[:60]!r} in a parameter is not one the grader rebuilds")
            return
        if tag == "dt":
            _dtype(body)
            return
        if tag == "z":
            if not _complex(body):
                raise Refused(f"a malformed complex number {str(body)[:40]!r}")
            return
        if tag in ("s", "a", "sa") and not (isinstance(body, list) and len(body) == (2 if tag == "s" else 3)):
            raise Refused(f"a malformed {tag!r} value")
        if tag == "f":
            ok = _named(body, FLOAT_NAMES)
        elif tag in ("leaf", "ftn"):
            ok = _index(body)
        elif tag == "s":
            ok = _dtype(body[0]) and (_number(body[1]) or body[0] in COMPLEX and _complex(body[1]))
        elif tag == "a":
            ok = _dtype(body[0]) and _shape(body[1]) and isinstance(body[2], str)
        else:
            ok = (_shape(body[0]) and isinstance(body[1], dict) and set(body[1]) == {"dt"} and _dtype(body[1]["dt"])
                  and isinstance(body[2], bool))
        if not ok:
            raise Refused(f"a malformed {'float' if tag == 'f' else repr(tag) + ' value'} {str(body)[:20]!r}")

    def flat(self, body: Any, depth: int) -> None:
        for e in _list(body, "ftt"):
            if not (isinstance(e, dict) and len(e) == 1 and next(iter(e)) in ("ftt", "ftn")):
                raise Refused("a malformed flat tree")
            self.value(e, self.deeper(depth))


SCALAR_TAGS = frozenset({"f", "dt", "leaf", "ftn", "e", "s", "a", "sa", "z"})


def _named(x: Any, names: frozenset) -> bool:
    return isinstance(x, str) and x in names


def _list(body: Any, tag: str) -> list:
    if not isinstance(body, list):
        raise Refused(f"a malformed {tag!r} value")
    return body


def _index(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and 0 <= x < MAX_INT


def _number(x: Any) -> bool:
    """A bounded integer, a finite float or a bool."""
    if isinstance(x, bool):
        return True
    if isinstance(x, int):
        return -MAX_INT <= x < MAX_INT
    return isinstance(x, float) and x == x and abs(x) != float("inf")


def _complex(x: Any) -> bool:
    """[real, imaginary]: each a finite number or a float's name (nan, inf, -inf)."""
    return isinstance(x, list) and len(x) == 2 and all(
        _named(v, FLOAT_NAMES) or _number(v) and not isinstance(v, bool) for v in x)


def _dtype(x: Any) -> bool:
    if not dtype_name_ok(x):
        raise Refused(f"dtype {str(x)[:40]!r} is not one the grader rebuilds")
    return True


def _shape(x: Any) -> bool:
    return isinstance(x, list) and len(x) <= MAX_RANK and all(_index(n) for n in x)


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
    """The whole document against the grammar (the module docstring) and the limits."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("program"), dict):
        raise Refused(f"not a traced program of format {FORMAT}")
    if not set(doc) <= DOC_KEYS:
        raise Refused(f"a traced program holds only {sorted(DOC_KEYS)}")
    sources = doc.get("sources", [])
    _check_sources(sources)
    walk = _Document(len(sources))
    walk.closed(doc["program"], 1)
    walk.value(doc.get("out_tree"), 1)


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
