"""Assignment specs: ``assignments/<slug>/spec.toml`` as frozen, validated dataclasses.

A broken spec is the instructor's problem, not the student's: every error names
the file, the key, the rule and the value seen, and is raised before any
student code runs.
"""
from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any


DTYPES = ("float32", "bfloat16", "float16", "int32")
VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
DISTRIBUTIONS = ("normal", "uniform")
# Rungs that can grade correctness on a CPU-only machine.
CPU_RUNGS = ("generic", "tpu-interpret")
# Probe checks an assignment may enable under [probes.<name>]; autograder.probes
# registers exactly these (asserted there).
PROBES = ("index-maps", "compile", "vmem", "structure", "poisoning", "grid-order", "races",
          "numerics")
STRUCTURE_TECHNIQUES = ("manual-dma",)


class SpecError(ValueError):
    """A spec that breaks a rule: names the file, the key, the rule and the value seen."""

    def __init__(self, file: Path | str, key: str, rule: str, value: Any):
        self.file, self.key, self.rule, self.value = str(file), key, rule, value
        super().__init__(f"{file}: key '{key}': {rule}; got {value!r}")


@dataclass(frozen=True)
class DimRule:
    name: str
    multiple_of: int = 1
    min: int = 1
    max: int | None = None

    def admits(self, v, check_max: bool = True) -> bool:
        return (isinstance(v, int) and not isinstance(v, bool) and v >= self.min
                and v % self.multiple_of == 0
                and (not check_max or self.max is None or v <= self.max))

    @property
    def text(self) -> str:
        return (f"must be an integer >= {self.min}, a multiple of {self.multiple_of}"
                + (f", <= {self.max}" if self.max else ""))


@dataclass(frozen=True)
class InputSpec:
    name: str
    kind: str                      # "array" or "float" (a static Python float)
    shape: tuple[str, ...] = ()
    dtype: str = "case"            # a dtype name, or "case" to take the case's dtype
    distribution: str = "normal"
    scale: float = 1.0


@dataclass(frozen=True)
class OutputSpec:
    shape: tuple[str, ...]
    dtype: str                     # a dtype name, or "case"


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float                    # multiplied by sqrt(reduction length)


@dataclass(frozen=True)
class Limits:
    startup_s: float = 120.0       # importing JAX and the submission, once per child
    case_s: float = 60.0           # one case on one rung
    memory_mb: int = 600           # resident memory of the child and all it starts
    total_s: float = 540.0         # the whole grading run
    gradescope_timeout_s: float = 600.0   # the assignment's Gradescope timeout (default 600 s)


# Gradescope's timeout also covers starting the container and writing results.
GRADESCOPE_MARGIN_S = 60.0


@dataclass(frozen=True)
class Stress:
    """numerics: one stress input, the probe case with some dims, dtype or input
    scales replaced (long reductions, bfloat16, large-magnitude values)."""
    name: str
    dims: tuple[tuple[str, int], ...] = ()
    dtype: str | None = None
    scale: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class ProbeRubric:
    name: str
    points: float
    visibility: str = "visible"
    seeds: tuple[int, ...] = (1, 2, 3)     # grid-order: TPU interpret random seeds
    stress: tuple[Stress, ...] = ()        # numerics: the stress inputs


@dataclass(frozen=True)
class Production:
    """The real problem size, traced with abstract shapes only (never run)."""
    dims: tuple[tuple[str, int], ...]
    dtype: str
    vmem_limit_bytes: int
    chip: str


@dataclass(frozen=True)
class Structure:
    allow: tuple[str, ...] = ()            # primitives allowed outside the kernel
    require: tuple[str, ...] = ()          # techniques the kernel must use


@dataclass(frozen=True)
class Case:
    name: str
    dims: tuple[tuple[str, int], ...]
    dtype: str
    seed: int
    points: float
    visibility: str = "visible"
    params: tuple[tuple[str, float], ...] = ()
    scale: tuple[tuple[str, float], ...] = ()   # per-input overrides of InputSpec.scale

    @property
    def dim_map(self) -> dict[str, int]:
        return dict(self.dims)

    @property
    def visible(self) -> bool:
        return self.visibility == "visible"


@dataclass(frozen=True)
class Assignment:
    slug: str
    folder: Path
    title: str
    entry_file: str
    entry_function: str
    reference: str                 # "file.py:function" inside the assignment folder
    inputs: tuple[InputSpec, ...]
    output: OutputSpec
    dims: tuple[DimRule, ...]
    tolerances: tuple[tuple[str, Tolerance], ...]
    numerics_bound: float
    reduction_dim: str | None
    rungs: tuple[str, ...]
    cases: tuple[Case, ...]
    limits: Limits
    snippet_reference: str
    probes: tuple[ProbeRubric, ...] = ()
    probe_cases: tuple[str, ...] = ()
    production: Production | None = None
    structure: Structure = Structure()

    def probe(self, name: str) -> ProbeRubric | None:
        return next((p for p in self.probes if p.name == name), None)

    def tolerance(self, dtype: str) -> Tolerance:
        return dict(self.tolerances)[dtype]

    def case(self, name: str) -> Case:
        for c in self.cases:
            if c.name == name:
                return c
        raise KeyError(name)

    def shape(self, names: tuple[str, ...], case: Case) -> tuple[int, ...]:
        dims = case.dim_map
        return tuple(dims[n] for n in names)

    def dtype_of(self, declared: str, case: Case) -> str:
        return case.dtype if declared == "case" else declared

    def reduction_length(self, case: Case) -> int:
        return case.dim_map[self.reduction_dim] if self.reduction_dim else 1

    def stress_case(self, case: Case, stress: Stress) -> Case:
        """The case a numerics stress input runs: ``case`` with the stress's overrides."""
        return replace(case, name=f"{case.name}+{stress.name}",
                       dims=tuple(sorted({**case.dim_map, **dict(stress.dims)}.items())),
                       dtype=stress.dtype or case.dtype,
                       scale=tuple(sorted({**dict(case.scale), **dict(stress.scale)}.items())))


class _Reader:
    """Typed access to one TOML table that reports errors with their full key path."""

    def __init__(self, file: Path, table: dict, prefix: str = ""):
        self.file, self.table, self.prefix = file, table, prefix

    def key(self, name: str) -> str:
        return f"{self.prefix}{name}"

    def fail(self, name: str, rule: str, value: Any) -> SpecError:
        return SpecError(self.file, self.key(name), rule, value)

    def get(self, name: str, types: type | tuple, rule: str, default: Any = ...) -> Any:
        if name not in self.table:
            if default is ...:
                raise self.fail(name, f"is required ({rule})", None)
            return default
        value = self.table[name]
        if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
            raise self.fail(name, rule, value)
        if not isinstance(value, types):
            raise self.fail(name, rule, value)
        return value

    def choice(self, name: str, options: tuple, default: Any = ...) -> Any:
        value = self.get(name, str, f"must be one of {list(options)}", default)
        if value not in options:
            raise self.fail(name, f"must be one of {list(options)}", value)
        return value

    def positive(self, name: str, default: Any = ..., integer: bool = False) -> Any:
        types = int if integer else (int, float)
        kind = "a positive integer" if integer else "a positive number"
        value = self.get(name, types, f"must be {kind}", default)
        if value is None and default is None:
            return None
        if not (isinstance(value, (int, float)) and value > 0 and math.isfinite(value)):
            raise self.fail(name, f"must be {kind}", value)
        return value

    def sub(self, name: str, default: Any = ...) -> "_Reader":
        table = self.get(name, dict, "must be a table", {} if default is not ... else ...)
        return _Reader(self.file, table, f"{self.key(name)}.")

    def items(self, name: str) -> list["_Reader"]:
        rows = self.get(name, list, "must be an array of tables")
        out = []
        for i, row in enumerate(rows):
            if not isinstance(row, dict):
                raise SpecError(self.file, f"{self.key(name)}[{i}]", "must be a table", row)
            out.append(_Reader(self.file, row, f"{self.key(name)}[{i}]."))
        return out

    def unknown(self, allowed: set[str]) -> None:
        extra = sorted(set(self.table) - allowed)
        if extra:
            raise self.fail(extra[0], f"is not a known key (known: {sorted(allowed)})",
                            self.table[extra[0]])


def _names(r: _Reader, name: str, dims: set[str]) -> tuple[str, ...]:
    shape = r.get(name, list, "must be a list of dimension names")
    for i, d in enumerate(shape):
        if d not in dims:
            raise SpecError(r.file, f"{r.key(name)}[{i}]",
                            f"must name a dimension declared under [dims] ({sorted(dims)})", d)
    return tuple(shape)


def load(folder: Path | str) -> Assignment:
    """Read and validate ``<folder>/spec.toml``."""
    folder = Path(folder)
    file = folder / "spec.toml"
    try:
        raw = tomllib.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecError(file, "(file)", "the assignment folder must hold spec.toml", None) from None
    except tomllib.TOMLDecodeError as e:
        raise SpecError(file, "(file)", "must be valid TOML", str(e)) from None
    r = _Reader(file, raw)
    r.unknown({"title", "entry_file", "entry_function", "reference", "inputs", "output", "dims",
               "tolerance", "numerics_bound", "reduction_dim", "rungs", "cases", "limits",
               "snippet_reference", "probes", "probe_cases", "production", "structure"})

    title = r.get("title", str, "must be a string")
    entry_file = r.get("entry_file", str, "must be a file name ending in .py")
    if not entry_file.endswith(".py") or "/" in entry_file:
        raise r.fail("entry_file", "must be a plain file name ending in .py", entry_file)
    entry_function = r.get("entry_function", str, "must be a Python identifier")
    if not entry_function.isidentifier():
        raise r.fail("entry_function", "must be a Python identifier", entry_function)
    reference = r.get("reference", str, "must be 'file.py:function'")
    ref_file, _, ref_fn = reference.partition(":")
    if not ref_fn or not (folder / ref_file).is_file():
        raise r.fail("reference", "must be 'file.py:function' naming a file in the assignment "
                     "folder", reference)

    dims_r = r.sub("dims")
    dims = []
    for name, table in dims_r.table.items():
        if not isinstance(table, dict):
            raise dims_r.fail(name, "must be a table such as { multiple_of = 8 }", table)
        d = _Reader(file, table, f"dims.{name}.")
        d.unknown({"multiple_of", "min", "max"})
        dims.append(DimRule(name, d.positive("multiple_of", 1, integer=True),
                            d.positive("min", 1, integer=True),
                            d.positive("max", None, integer=True)))
    dim_names = {d.name for d in dims}

    inputs = []
    for ir in r.items("inputs"):
        ir.unknown({"name", "kind", "shape", "dtype", "distribution", "scale"})
        kind = ir.choice("kind", ("array", "float"), "array")
        name = ir.get("name", str, "must be a Python identifier")
        if kind == "float":
            inputs.append(InputSpec(name, kind))
            continue
        inputs.append(InputSpec(
            name, kind, _names(ir, "shape", dim_names),
            ir.choice("dtype", DTYPES + ("case",), "case"),
            ir.choice("distribution", DISTRIBUTIONS, "normal"),
            float(ir.positive("scale", 1.0))))
    if not inputs:
        raise r.fail("inputs", "must declare at least one input", [])

    orr = r.sub("output")
    orr.unknown({"shape", "dtype"})
    output = OutputSpec(_names(orr, "shape", dim_names), orr.choice("dtype", DTYPES + ("case",)))

    reduction_dim = r.get("reduction_dim", str, "must name a dimension", None)
    if reduction_dim is not None and reduction_dim not in dim_names:
        raise r.fail("reduction_dim", f"must name a dimension declared under [dims] "
                     f"({sorted(dim_names)})", reduction_dim)

    tol_r = r.sub("tolerance")
    tolerances = []
    for dtype, table in tol_r.table.items():
        if dtype not in DTYPES:
            raise tol_r.fail(dtype, f"must be a dtype in {list(DTYPES)}", dtype)
        if not isinstance(table, dict):
            raise tol_r.fail(dtype, "must be a table { rtol = ..., atol = ... }", table)
        t = _Reader(file, table, f"tolerance.{dtype}.")
        t.unknown({"rtol", "atol"})
        tolerances.append((dtype, Tolerance(float(t.positive("rtol")), float(t.positive("atol")))))
    numerics_bound = float(r.positive("numerics_bound", 0.05))

    rungs = tuple(r.get("rungs", list, "must be a list of rungs", list(CPU_RUNGS)))
    for i, rung in enumerate(rungs):
        if rung not in CPU_RUNGS:
            raise SpecError(file, f"rungs[{i}]", f"must be one of {list(CPU_RUNGS)}", rung)
    if not rungs:
        raise r.fail("rungs", "must list at least one rung", [])

    lr = r.sub("limits", {})
    lr.unknown({"startup_s", "case_s", "memory_mb", "total_s", "gradescope_timeout_s"})
    limits = Limits(float(lr.positive("startup_s", Limits.startup_s)),
                    float(lr.positive("case_s", Limits.case_s)),
                    int(lr.positive("memory_mb", Limits.memory_mb, integer=True)),
                    float(lr.positive("total_s", Limits.total_s)),
                    float(lr.positive("gradescope_timeout_s", Limits.gradescope_timeout_s)))
    if limits.total_s > limits.gradescope_timeout_s - GRADESCOPE_MARGIN_S:
        raise lr.fail("total_s", f"must leave {GRADESCOPE_MARGIN_S:g} s of gradescope_timeout_s "
                      f"({limits.gradescope_timeout_s:g} s) for starting and writing results",
                      limits.total_s)

    cases, seen = [], set()
    for cr in r.items("cases"):
        cr.unknown({"name", "dims", "dtype", "seed", "points", "visibility", "params", "scale"})
        name = cr.get("name", str, "must be a short name")
        if name in seen:
            raise cr.fail("name", "must be unique among cases", name)
        seen.add(name)
        dims_t = cr.get("dims", dict, "must be a table of dimension sizes")
        for rule in dims:
            if rule.name not in dims_t:
                raise cr.fail(f"dims.{rule.name}", "is required (every declared dimension)", None)
            if not rule.admits(dims_t[rule.name]):
                raise cr.fail(f"dims.{rule.name}", rule.text, dims_t[rule.name])
        for extra in sorted(set(dims_t) - dim_names):
            raise cr.fail(f"dims.{extra}", f"must be a declared dimension ({sorted(dim_names)})",
                          dims_t[extra])
        dtype = cr.choice("dtype", DTYPES, "float32")
        if dtype not in dict(tolerances):
            raise cr.fail("dtype", f"needs a [tolerance.{dtype}] table", dtype)
        seed = cr.get("seed", int, "must be a non-negative integer")
        if seed < 0:
            raise cr.fail("seed", "must be a non-negative integer", seed)
        params = cr.get("params", dict, "must be a table of floats", {})
        for inp in inputs:
            if inp.kind == "float" and not isinstance(params.get(inp.name), (int, float)):
                raise cr.fail(f"params.{inp.name}", "is required: a number for the float input",
                              params.get(inp.name))
        scale = cr.get("scale", dict, "must be a table of input scales", {})
        for k, v in scale.items():
            if k not in {i.name for i in inputs} or not isinstance(v, (int, float)) or v <= 0:
                raise cr.fail(f"scale.{k}", "must map an input name to a positive number", v)
        cases.append(Case(
            name=name, dims=tuple(sorted((k, int(v)) for k, v in dims_t.items())), dtype=dtype,
            seed=seed, points=float(cr.positive("points")),
            visibility=cr.choice("visibility", VISIBILITIES, "visible"),
            params=tuple(sorted((k, float(v)) for k, v in params.items())),
            scale=tuple(sorted((k, float(v)) for k, v in scale.items()))))
    if not cases:
        raise r.fail("cases", "must declare at least one case", [])
    tests = len(cases) * len(rungs)
    if limits.startup_s + limits.case_s * tests > limits.total_s:
        # Then a submission that hangs on every run still gets each test tried in
        # its own budget: exhausting one budget loses only that test.
        raise lr.fail("case_s", f"startup_s + case_s x {tests} tests (cases x rungs) must fit in "
                      f"total_s ({limits.total_s:g} s)", limits.case_s)

    probes = []
    pr = r.sub("probes", {})
    for name, table in pr.table.items():
        if name not in PROBES:
            raise pr.fail(name, f"must be a known probe ({list(PROBES)})", name)
        if not isinstance(table, dict):
            raise pr.fail(name, "must be a table such as { points = 1 }", table)
        t = _Reader(file, table, f"probes.{name}.")
        t.unknown({"points", "visibility", "seeds"} | ({"stress"} if name == "numerics" else set()))
        seeds = t.get("seeds", list, "must be a list of non-negative integers", [1, 2, 3])
        if not seeds or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in seeds):
            raise t.fail("seeds", "must be a non-empty list of non-negative integers", seeds)
        points = t.get("points", (int, float), "must be a number >= 0")
        if points < 0:
            raise t.fail("points", "must be a number >= 0", points)
        stress = _stress(t, dims, dict(tolerances), {i.name for i in inputs if i.kind == "array"}) \
            if name == "numerics" else ()
        probes.append(ProbeRubric(name, float(points), t.choice("visibility", VISIBILITIES, "visible"),
                                  tuple(seeds), stress))
    case_names = [c.name for c in cases]
    probe_cases = r.get("probe_cases", list, "must be a list of case names",
                        [c.name for c in cases if c.visible])
    for i, n in enumerate(probe_cases):
        if n not in case_names:
            raise SpecError(file, f"probe_cases[{i}]", f"must name a case ({case_names})", n)
    production = None
    if "production" in raw:
        pd = r.sub("production")
        pd.unknown({"dims", "dtype", "vmem_limit_mib", "chip"})
        pdims = pd.get("dims", dict, "must be a table of dimension sizes")
        for rule in dims:
            # The production size may exceed the test cases' max: only the shape rules apply.
            if not rule.admits(pdims.get(rule.name), check_max=False):
                raise pd.fail(f"dims.{rule.name}", rule.text, pdims.get(rule.name))
        production = Production(tuple(sorted(pdims.items())), pd.choice("dtype", DTYPES, "float32"),
                                int(pd.positive("vmem_limit_mib") * 1024 * 1024),
                                pd.get("chip", str, "must be a chip name", "TPU"))
    if any(p.name == "vmem" for p in probes) and production is None:
        raise r.fail("production", "is required when [probes.vmem] is enabled", None)
    sr = r.sub("structure", {})
    sr.unknown({"allow", "require"})
    allow = sr.get("allow", list, "must be a list of primitive names", [])
    require = sr.get("require", list, f"must be a list of techniques {list(STRUCTURE_TECHNIQUES)}", [])
    for i, tech in enumerate(require):
        if tech not in STRUCTURE_TECHNIQUES:
            raise SpecError(file, f"structure.require[{i}]",
                            f"must be one of {list(STRUCTURE_TECHNIQUES)}", tech)

    return Assignment(
        slug=folder.name, folder=folder, title=title, entry_file=entry_file,
        entry_function=entry_function, reference=reference, inputs=tuple(inputs), output=output,
        dims=tuple(dims), tolerances=tuple(tolerances), numerics_bound=numerics_bound,
        reduction_dim=reduction_dim, rungs=rungs, cases=tuple(cases), limits=limits,
        snippet_reference=r.get("snippet_reference", str, "must be a numpy expression", ""),
        probes=tuple(probes), probe_cases=tuple(probe_cases), production=production,
        structure=Structure(tuple(str(a) for a in allow), tuple(require)))


def _stress(t: _Reader, dims: list[DimRule], tolerances: dict, arrays: set[str]) -> tuple[Stress, ...]:
    """[[probes.numerics.stress]]: name, and dims / dtype / scale overrides of the probe case."""
    out, seen = [], set()
    for sr in t.items("stress"):
        sr.unknown({"name", "dims", "dtype", "scale"})
        name = sr.get("name", str, "must be a short name")
        if name in seen:
            raise sr.fail("name", "must be unique among stress inputs", name)
        seen.add(name)
        sdims = sr.get("dims", dict, "must be a table of dimension sizes", {})
        rules = {d.name: d for d in dims}
        for k, v in sdims.items():
            # A stress input may exceed the cases' max (a longer reduction): only the shape rules apply.
            if k not in rules or not rules[k].admits(v, check_max=False):
                raise sr.fail(f"dims.{k}", rules[k].text if k in rules else
                              f"must be a declared dimension ({sorted(rules)})", v)
        dtype = sr.get("dtype", str, f"must be one of {list(DTYPES)}", None)
        if dtype is not None and dtype not in tolerances:
            raise sr.fail("dtype", f"must be a dtype with a [tolerance.<dtype>] table ({sorted(tolerances)})",
                          dtype)
        scale = sr.get("scale", dict, "must be a table of input scales", {})
        for k, v in scale.items():
            if k not in arrays or isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
                raise sr.fail(f"scale.{k}", "must map an array input's name to a positive number", v)
        out.append(Stress(name, tuple(sorted((k, int(v)) for k, v in sdims.items())), dtype,
                          tuple(sorted((k, float(v)) for k, v in scale.items()))))
    if not out:
        raise t.fail("stress", "must list at least one stress input", [])
    return tuple(out)


def assignments_root() -> Path:
    """The folder holding assignment folders: beside the package in a checkout or zip."""
    import os
    env = os.environ.get("PALLAS_AUTOGRADER_ASSIGNMENTS")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent / "assignments"


def available(root: Path | None = None) -> list[str]:
    root = root or assignments_root()
    return sorted(p.name for p in root.iterdir() if (p / "spec.toml").is_file()) if root.is_dir() else []


def find(slug: str, root: Path | None = None) -> Assignment:
    root = root or assignments_root()
    if slug not in available(root):
        raise LookupError(f"unknown assignment {slug!r}; valid: {', '.join(available(root)) or '(none)'}"
                          f" (looked in {root})")
    return load(root / slug)
