"""``spec.toml`` read one table at a time; ``load`` puts the tables together.

A broken spec is the instructor's problem, not the student's: every error names
the file, the key, the rule and the value seen, and is raised before any
student code runs. Each probe reads the keys of its own ``[probes.<name>]``
table (its ``ProbeTerms``, handed to ``load``); this module knows only the keys every
probe has, and names no probe.
"""
from __future__ import annotations

from pathlib import Path

from ..pallas_surface import release
from ..pallas_surface.program import schema
from .model import (
    CHIPS,
    CPU_RUNGS,
    DISTRIBUTIONS,
    DTYPES,
    GRADESCOPE_MARGIN_S,
    STRUCTURE_TECHNIQUES,
    VISIBILITIES,
    Assignment,
    Case,
    Checks,
    DimRule,
    InputSpec,
    Limits,
    OutputSpec,
    ProbeRubric,
    Production,
    Speed,
    SpeedSize,
    Structure,
    Tolerance,
)
from .reader import SpecError, TableReader
from .vocabulary import SpecContext, Vocabulary

TOP_KEYS = frozenset({"title", "entry_file", "entry_function", "reference", "inputs", "output",
                      "dims", "tolerance", "numerics_bound", "reduction_dim", "rungs", "cases",
                      "limits", "snippet_reference", "probes", "probe_cases", "probe_draw", "production",
                      "structure", "stdout_visibility", "numerics_hint", "checks", "speed", "jax"})
PROBE_KEYS = frozenset({"points", "visibility", "gates"})   # every probe's; each adds its own
GATED = ("correctness",)     # what a probe may gate besides other probes


def _names(r: TableReader, name: str, dims: set[str]) -> tuple[str, ...]:
    shape = r.get(name, list, "must be a list of dimension names")
    for i, d in enumerate(shape):
        if d not in dims:
            raise SpecError(r.file, f"{r.key(name)}[{i}]",
                            f"must name a dimension declared under [dims] ({sorted(dims)})", d)
    return tuple(shape)


def read_entry(r: TableReader, folder: Path) -> dict:
    """title, entry_file, entry_function, reference, snippet_reference."""
    entry_file = r.get("entry_file", str, "must be a file name ending in .py")
    if not entry_file.endswith(".py") or "/" in entry_file:
        raise r.fail("entry_file", "must be a plain file name ending in .py", entry_file)
    reference = r.get("reference", str, "must be 'file.py:function'")
    ref_file, _, ref_fn = reference.partition(":")
    if not ref_fn or not (folder / ref_file).is_file():
        raise r.fail("reference", "must be 'file.py:function' naming a file in the assignment "
                     "folder", reference)
    return {"title": r.get("title", str, "must be a string"), "entry_file": entry_file,
            "entry_function": r.identifier("entry_function"), "reference": reference,
            "snippet_reference": r.get("snippet_reference", str, "must be a numpy expression", "")}


def read_dims(r: TableReader) -> tuple[DimRule, ...]:
    dims_r = r.sub("dims")
    dims = []
    for name, table in dims_r.table.items():
        d = dims_r.table_of(name, table, "{ multiple_of = 8 }")
        d.unknown({"multiple_of", "min", "max"})
        dims.append(DimRule(name, d.positive("multiple_of", 1, integer=True),
                            d.positive("min", 1, integer=True), d.positive("max", None, integer=True)))
    return tuple(dims)


def read_inputs(r: TableReader, dim_names: set[str]) -> tuple[InputSpec, ...]:
    inputs = []
    for ir in r.items("inputs"):
        ir.unknown({"name", "kind", "shape", "dtype", "distribution", "scale"})
        kind = ir.choice("kind", ("array", "float"), "array")
        name = ir.identifier("name")
        if kind == "float":
            inputs.append(InputSpec(name, kind))
            continue
        inputs.append(InputSpec(name, kind, _names(ir, "shape", dim_names),
                                ir.choice("dtype", DTYPES + ("case",), "case"),
                                ir.choice("distribution", DISTRIBUTIONS, "normal"),
                                float(ir.positive("scale", 1.0))))
    if not inputs:
        raise r.fail("inputs", "must declare at least one input", [])
    return tuple(inputs)


def read_output(r: TableReader, dim_names: set[str]) -> OutputSpec:
    orr = r.sub("output")
    orr.unknown({"shape", "dtype"})
    return OutputSpec(_names(orr, "shape", dim_names), orr.choice("dtype", DTYPES + ("case",)))


def read_tolerances(r: TableReader) -> tuple[tuple[str, Tolerance], ...]:
    tol_r = r.sub("tolerance")
    tolerances = []
    for dtype, table in tol_r.table.items():
        if dtype not in DTYPES:
            raise tol_r.fail(dtype, f"must be a dtype in {list(DTYPES)}", dtype)
        t = tol_r.table_of(dtype, table, "{ rtol = ..., atol = ... }")
        t.unknown({"rtol", "atol"})
        tolerances.append((dtype, Tolerance(float(t.positive("rtol")), float(t.positive("atol")))))
    return tuple(tolerances)


def read_own_tolerance(r: TableReader, whose: str, documented: str) -> Tolerance | None:
    """A case's or stress input's own ``tolerance = { rtol = ..., atol = ... }``, or None."""
    tol = r.get("tolerance", dict, f"must be a table {{ rtol = ..., atol = ... }}: {whose} tolerance", None,
                documented=documented)
    if tol is None:
        return None
    t = r.table_of("tolerance", tol, "{ rtol = ..., atol = ... }")
    t.unknown({"rtol", "atol"})
    return Tolerance(float(t.positive("rtol")), float(t.positive("atol")))


def read_rungs(r: TableReader) -> tuple[str, ...]:
    rungs = tuple(r.get("rungs", list, "must be a list of rungs", list(CPU_RUNGS)))
    for i, rung in enumerate(rungs):
        if rung not in CPU_RUNGS:
            raise SpecError(r.file, f"rungs[{i}]", f"must be one of {list(CPU_RUNGS)}", rung)
    if not rungs:
        raise r.fail("rungs", "must list at least one rung", [])
    return rungs


def read_limits(r: TableReader) -> tuple[Limits, TableReader]:
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
    return limits, lr


def _case_dims(cr: TableReader, dims: tuple[DimRule, ...]) -> tuple[tuple[str, int], ...]:
    dims_t = cr.get("dims", dict, "must be a table of dimension sizes")
    names = {d.name for d in dims}
    for rule in dims:
        if rule.name not in dims_t:
            raise cr.fail(f"dims.{rule.name}", "is required (every declared dimension)", None)
        if not rule.admits(dims_t[rule.name]):
            raise cr.fail(f"dims.{rule.name}", rule.text, dims_t[rule.name])
    for extra in sorted(set(dims_t) - names):
        raise cr.fail(f"dims.{extra}", f"must be a declared dimension ({sorted(names)})", dims_t[extra])
    return tuple(sorted((k, int(v)) for k, v in dims_t.items()))


def read_case(cr: TableReader, ctx: SpecContext) -> Case:
    cr.unknown({"name", "dims", "dtype", "seed", "points", "visibility", "secret", "params", "scale",
                "partial_edge_block", "tolerance"})
    name = cr.get("name", str, "must be a non-empty name")
    if not name.strip():
        raise cr.fail("name", "must be a non-empty name", name)
    dims = _case_dims(cr, ctx.dims)
    dtype = cr.choice("dtype", DTYPES, "float32")
    if dtype not in ctx.tolerances:
        raise cr.fail("dtype", f"needs a [tolerance.{dtype}] table", dtype)
    seed = cr.get("seed", int, "must be a non-negative integer")
    if seed < 0:
        raise cr.fail("seed", "must be a non-negative integer", seed)
    params = cr.get("params", dict, "must be a table of floats", {})
    for inp in ctx.inputs:
        if inp.kind == "float" and not isinstance(params.get(inp.name), (int, float)):
            raise cr.fail(f"params.{inp.name}", "is required: a number for the float input",
                          params.get(inp.name))
    scale = cr.get("scale", dict, "must be a table of input scales", {})
    for k, v in scale.items():
        if k not in {i.name for i in ctx.inputs} or not isinstance(v, (int, float)) or v <= 0:
            raise cr.fail(f"scale.{k}", "must map an input name to a positive number", v)
    visibility = cr.choice("visibility", VISIBILITIES, "visible")
    # A test hidden from the student keeps its data secret too, unless the spec says otherwise.
    secret = cr.get("secret", bool, "must be true or false", visibility == "hidden",
                    documented="true when visibility is 'hidden', else false")
    # A claim `check` verifies on the solution's own tiling (the grader does not use it).
    partial = cr.get("partial_edge_block", bool, "must be true or false: whether the case leaves the "
                     "solution's tiling a partial block at an array's edge", False)
    tolerance = read_own_tolerance(cr, "this case's", "the tolerance of the case's dtype")
    return Case(name=name, dims=dims, dtype=dtype, seed=seed, points=float(cr.positive("points")),
                visibility=visibility, secret=secret, partial_edge_block=partial, tolerance=tolerance,
                params=tuple(sorted((k, float(v)) for k, v in params.items())),
                scale=tuple(sorted((k, float(v)) for k, v in scale.items())))


def read_cases(r: TableReader, ctx: SpecContext) -> tuple[Case, ...]:
    cases, seen = [], set()
    for cr in r.items("cases"):
        case = read_case(cr, ctx)
        if case.name in seen:
            raise cr.fail("name", "must be unique among cases", case.name)
        seen.add(case.name)
        cases.append(case)
    if not cases:
        raise r.fail("cases", "must declare at least one case", [])
    return tuple(cases)


def check_budget(lr: TableReader, limits: Limits, tests: int) -> None:
    """Every test keeps a budget of its own: a submission that hangs on every
    run still has each test tried."""
    if limits.startup_s + limits.case_s * tests > limits.total_s:
        raise lr.fail("case_s", f"startup_s + case_s x {tests} tests (cases x rungs) must fit in "
                      f"total_s ({limits.total_s:g} s)", limits.case_s)


def read_probes(r: TableReader, ctx: SpecContext, vocabulary: Vocabulary) -> tuple[ProbeRubric, ...]:
    probes = []
    pr = r.sub("probes", {})
    for name, table in pr.table.items():
        if name not in vocabulary:
            raise pr.fail(name, f"must be a known probe ({list(vocabulary)})", name)
        probe = vocabulary[name]
        t = pr.table_of(name, table, "{ points = 1 }")
        t.unknown(PROBE_KEYS | probe.keys)
        points = t.get("points", (int, float), "must be a number >= 0")
        if points < 0:
            raise t.fail("points", "must be a number >= 0", points)
        settings = probe.read_settings(t, ctx) if probe.read_settings else None
        gates = t.get("gates", list, f"must be a list of {list(GATED)} or probe names", [])
        for i, g in enumerate(gates):
            if g not in GATED and g not in pr.table or g == name:
                raise SpecError(r.file, f"probes.{name}.gates[{i}]",
                                f"must be one of {list(GATED)} or another enabled probe "
                                f"({sorted(set(pr.table) - {name})})", g)
        probes.append(ProbeRubric(probe, float(points), t.choice("visibility", VISIBILITIES, "visible"),
                                  settings, tuple(gates)))
    return tuple(probes)


def read_probe_cases(r: TableReader, cases: tuple[Case, ...]) -> tuple[str, ...]:
    names = [c.name for c in cases]
    probe_cases = r.get("probe_cases", list, "must be a list of case names (the first is the case the "
                        "numerics stress inputs are built on)", [c.name for c in cases if c.visible],
                        documented="every visible case")
    for i, n in enumerate(probe_cases):
        if n not in names:
            raise SpecError(r.file, f"probe_cases[{i}]", f"must name a case ({names})", n)
    return tuple(probe_cases)


def refuse_probe_draw(r: TableReader) -> None:
    """``probe_draw`` (a subset of the probe cases drawn per grading) is gone:
    every check runs on every graded case, so a spec that still says it is told so."""
    if "probe_draw" in r.table:
        raise r.fail("probe_draw", "is no longer a key: every check runs on every graded case "
                     "(remove it)", r.table["probe_draw"])


def read_production(r: TableReader, dims: tuple[DimRule, ...]) -> Production | None:
    if "production" not in r.table:
        return None
    pd = r.sub("production", documented="none (required when [probes.vmem] is enabled)")
    pd.unknown({"dims", "dtype", "vmem_limit_mib", "chip"})
    pdims = pd.get("dims", dict, "must be a table of dimension sizes")
    for rule in dims:
        # The production size may exceed the test cases' max: only the shape rules apply.
        if not rule.admits(pdims.get(rule.name), check_max=False):
            raise pd.fail(f"dims.{rule.name}", rule.text, pdims.get(rule.name))
    return Production(tuple(sorted(pdims.items())), pd.choice("dtype", DTYPES, "float32"),
                      int(pd.positive("vmem_limit_mib") * 1024 * 1024),
                      pd.get("chip", str, "must be a chip name", "TPU"))


# [structure] allow: the glue an assignment allows outside its kernels (pallas_surface.outside).
NEVER_GLUE = frozenset({"get", "swap", "addupdate"})    # a ref outside a kernel is never glue
ALLOW_RULE = (f"must be a list of the glue allowed on data outside a kernel: primitive names (jax.lax's, "
              f"e.g. 'add', 'cumsum') or {list(schema.OUTSIDE_KINDS)} (a position or a decision read from data)")


def read_structure(r: TableReader) -> Structure:
    sr = r.sub("structure", {})
    sr.unknown({"allow", "require", "probes_need_kernel"})
    allow = sr.get("allow", list, ALLOW_RULE, [])
    for i, name in enumerate(allow):
        if not isinstance(name, str) or name not in schema.OUTSIDE_KINDS and (
                name not in schema.FIRST_ORDER and name not in schema.WORK or name in NEVER_GLUE):
            raise SpecError(r.file, f"structure.allow[{i}]", ALLOW_RULE, name)
    require = sr.get("require", list, f"must be a list of techniques {list(STRUCTURE_TECHNIQUES)}", [])
    for i, tech in enumerate(require):
        if tech not in STRUCTURE_TECHNIQUES:
            raise SpecError(r.file, f"structure.require[{i}]",
                            f"must be one of {list(STRUCTURE_TECHNIQUES)}", tech)
    return Structure(tuple(str(a) for a in allow), tuple(require),
                     sr.get("probes_need_kernel", bool, "must be true or false", True))


def read_checks(r: TableReader, folder: Path) -> Checks | None:
    if "checks" not in r.table:
        return None
    cr = r.sub("checks", documented="none (no custom checks)")
    cr.unknown({"file", "limit_s"})
    name = cr.get("file", str, "must name a .py file of unittest checks in the assignment folder",
                  "checks.py")
    if not name.endswith(".py") or "/" in name or "\\" in name or not (folder / name).is_file():
        raise cr.fail("file", "must name a .py file of unittest checks in the assignment folder", name)
    return Checks(name, float(cr.positive("limit_s", Checks.limit_s)))


def _speed_size(r: TableReader, dims: tuple, tolerances: dict) -> SpeedSize:
    r.unknown({"name", "dims", "dtype"})
    sdims = r.get("dims", dict, "must be a table of every dimension's size")
    for rule in dims:
        # Like the production size, a speed size may exceed the cases' max.
        if not rule.admits(sdims.get(rule.name), check_max=False):
            raise r.fail(f"dims.{rule.name}", rule.text, sdims.get(rule.name))
    extra = sorted(set(sdims) - {d.name for d in dims})
    if extra:
        raise r.fail(f"dims.{extra[0]}", f"must be a dimension declared under [dims] ({[d.name for d in dims]})",
                     sdims[extra[0]])
    name = r.get("name", str, "must be a short name for the size")
    return SpeedSize(name, tuple(sorted(sdims.items())), r.choice("dtype", tuple(tolerances)))


def _curve(r: TableReader) -> tuple[tuple[float, float], ...]:
    rule = ("must be a list of [speed relative to the solution, share of the points] pairs, "
            "speeds increasing, shares in 0..1 and never decreasing")
    raw = r.get("curve", list, rule, [list(p) for p in Speed.curve])
    ok = len(raw) >= 1 and all(isinstance(p, list) and len(p) == 2 and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in p) for p in raw)
    pts = tuple((float(x), float(y)) for x, y in raw) if ok else ()
    if not ok or any(x <= 0 or not 0 <= y <= 1 for x, y in pts) or any(
            b[0] <= a[0] or b[1] < a[1] for a, b in zip(pts, pts[1:])):
        raise r.fail("curve", rule, raw)
    return pts


def read_speed(r: TableReader, dims: tuple, tolerances: dict, production: Production | None) -> Speed | None:
    """``[speed]``; without the table, an assignment with a production size gets
    the estimate at that size, unscored."""
    default = (SpeedSize("production", production.dims, production.dtype),) if production else ()
    if "speed" not in r.table:
        return Speed(sizes=default) if default else None
    sr = r.sub("speed", documented="the estimate at the [production] size, unscored (none without one)")
    sr.unknown({"chip", "sizes", "points", "tpu_points", "curve", "leaderboard", "visibility"})
    sizes = tuple(_speed_size(s, dims, tolerances) for s in sr.items("sizes")) if "sizes" in sr.table else default
    if not sizes:
        raise sr.fail("sizes", "must list at least one size ([[speed.sizes]]) when there is no [production]", None)
    names = [s.name for s in sizes]
    if len(set(names)) != len(names):
        raise sr.fail("sizes", "must have distinct names", names)

    def points(key: str) -> float:
        value = sr.get(key, (int, float), "must be a number of points >= 0", 0)
        if value < 0:
            raise sr.fail(key, "must be a number of points >= 0", value)
        return float(value)
    return Speed(sr.choice("chip", CHIPS, "v5e"), sizes, points("points"), points("tpu_points"), _curve(sr),
                 sr.get("leaderboard", bool, "must be true or false", False),
                 sr.choice("visibility", VISIBILITIES, "visible"))


def _toml(file: Path) -> dict:
    # Imported here: the results format imports this package's model, and must
    # import on the system Python of a Gradescope image (3.10, no tomllib) when
    # the grader's own venv is missing (see run_autograder).
    import tomllib
    try:
        return tomllib.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecError(file, "(file)", "the assignment folder must hold spec.toml", None) from None
    except tomllib.TOMLDecodeError as e:
        raise SpecError(file, "(file)", "must be valid TOML", str(e)) from None


def load(folder: Path | str, vocabulary: Vocabulary) -> Assignment:
    """Read and validate ``<folder>/spec.toml``; ``vocabulary``: the probes its
    ``[probes.<name>]`` tables may name (``grading.assignments`` gives the registry's)."""
    folder = Path(folder)
    r = TableReader(folder / "spec.toml", _toml(folder / "spec.toml"))
    r.unknown(TOP_KEYS)
    entry = read_entry(r, folder)
    dims = read_dims(r)
    dim_names = {d.name for d in dims}
    inputs = read_inputs(r, dim_names)
    output = read_output(r, dim_names)
    reduction_dim = r.get("reduction_dim", str, "must name a dimension", None)
    if reduction_dim is not None and reduction_dim not in dim_names:
        raise r.fail("reduction_dim", f"must name a dimension declared under [dims] "
                     f"({sorted(dim_names)})", reduction_dim)
    tolerances = read_tolerances(r)
    rungs = read_rungs(r)
    limits, lr = read_limits(r)
    ctx = SpecContext(dims, dict(tolerances), inputs)
    cases = read_cases(r, ctx)
    refuse_probe_draw(r)
    check_budget(lr, limits, len(cases) * len(rungs))
    probes = read_probes(r, ctx, vocabulary)
    production = read_production(r, dims)
    if any(p.name == "vmem" for p in probes) and production is None:
        raise r.fail("production", "is required when [probes.vmem] is enabled", None)
    return Assignment(
        slug=folder.name, folder=folder, **entry, inputs=inputs, output=output, dims=dims,
        tolerances=tolerances, numerics_bound=float(r.positive("numerics_bound", 0.05)),
        reduction_dim=reduction_dim, rungs=rungs, cases=cases, limits=limits, probes=probes,
        probe_cases=read_probe_cases(r, cases), production=production,
        structure=read_structure(r),
        stdout_visibility=r.choice("stdout_visibility", VISIBILITIES, "hidden"),
        numerics_hint=r.get("numerics_hint", str, "must be a sentence of advice", ""),
        checks=read_checks(r, folder), speed=read_speed(r, dims, dict(tolerances), production),
        jax=r.choice("jax", release.SUPPORTED, release.NEWEST))
