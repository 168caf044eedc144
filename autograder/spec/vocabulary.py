"""The probe vocabulary: what a spec may say about probes (names, keys, settings).

A probe is three things: a name the spec uses (with the keys of its
``[probes.<name>]`` table and how they are read), a planner of runs, and a judge
of their outcomes. The spec reader needs only the first, so it lives here, below
everything that plans or judges; ``autograder.grading.probes`` pairs each term
with its planner and judge (its ``REGISTRY`` names exactly these probes).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal

from .model import DTYPES, Stress, Tolerance
from .reader import TableReader

ProbeRung = Literal["static", "generic", "tpu-interpret"]


@dataclass(frozen=True)
class SpecContext:
    """What a probe's own keys are checked against (read before the probes table)."""
    dims: tuple
    tolerances: dict
    inputs: tuple


@dataclass(frozen=True)
class ProbeTerms:
    name: str
    title: str
    rung: ProbeRung                 # where its findings are seen
    ids: tuple[str, ...]            # the finding IDs it can produce
    per_case: bool = True           # False: runs once (on the first probe case)
    # The keys of its [probes.<name>] table beyond points, visibility and gates,
    # and the reader that turns them into the rubric's settings.
    keys: frozenset[str] = frozenset()
    read_settings: Callable[[TableReader, SpecContext], object] | None = None
    # It examines the kernel's behaviour: while the work is done outside the
    # kernel it has examined a copy, and earns nothing ([structure] probes_need_kernel).
    examines_kernel: bool = True

    @property
    def dynamic(self) -> bool:
        """Runs the kernel (as opposed to reading the traced program)."""
        return self.rung != "static"


DEFAULT_SEEDS = (1, 2, 3)


def read_seeds(t: TableReader, ctx: SpecContext) -> tuple[int, ...]:
    """[probes.grid-order] seeds: TPU interpret mode's random seeds to try."""
    seeds = t.get("seeds", list, "must be a list of non-negative integers", list(DEFAULT_SEEDS))
    if not seeds or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in seeds):
        raise t.fail("seeds", "must be a non-empty list of non-negative integers", seeds)
    return tuple(seeds)


def _stress_input(sr: TableReader, ctx: SpecContext) -> Stress:
    sr.unknown({"name", "dims", "dtype", "scale", "tolerance"})
    name = sr.get("name", str, "must be a short name")
    sdims = sr.get("dims", dict, "must be a table of dimension sizes", {})
    rules = {d.name: d for d in ctx.dims}
    for k, v in sdims.items():
        # A stress input may exceed the cases' max (a longer reduction): only the shape rules apply.
        if k not in rules or not rules[k].admits(v, check_max=False):
            raise sr.fail(f"dims.{k}", rules[k].text if k in rules else
                          f"must be a declared dimension ({sorted(rules)})", v)
    dtype = sr.get("dtype", str, f"must be one of {list(DTYPES)}", None)
    if dtype is not None and dtype not in ctx.tolerances:
        raise sr.fail("dtype", f"must be a dtype with a [tolerance.<dtype>] table "
                      f"({sorted(ctx.tolerances)})", dtype)
    arrays = {i.name for i in ctx.inputs if i.kind == "array"}
    scale = sr.get("scale", dict, "must be a table of input scales", {})
    for k, v in scale.items():
        if k not in arrays or isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
            raise sr.fail(f"scale.{k}", "must map an array input's name to a positive number", v)
    tol = sr.get("tolerance", dict, "must be a table { rtol = ..., atol = ... }: this stress input's "
                 "tolerance", None, documented="the tolerance of the stress input's dtype")
    tolerance = None
    if tol is not None:
        t = sr.table_of("tolerance", tol, "{ rtol = ..., atol = ... }")
        t.unknown({"rtol", "atol"})
        tolerance = Tolerance(float(t.positive("rtol")), float(t.positive("atol")))
    return Stress(name, tuple(sorted((k, int(v)) for k, v in sdims.items())), dtype,
                  tuple(sorted((k, float(v)) for k, v in scale.items())), tolerance)


def read_stress(t: TableReader, ctx: SpecContext) -> tuple[Stress, ...]:
    """[[probes.numerics.stress]]: name, and dims / dtype / scale overrides of the probe case."""
    out = []
    for sr in t.items("stress"):
        stress = _stress_input(sr, ctx)
        if stress.name in {s.name for s in out}:
            raise sr.fail("name", "must be unique among stress inputs", stress.name)
        out.append(stress)
    if not out:
        raise t.fail("stress", "must list at least one stress input", [])
    return tuple(out)


INDEX_MAPS = ProbeTerms("index-maps", "Static: index maps over the whole grid", "static",
                        ("out-of-bounds", "uninitialized-memory", "output-block-revisit"))
COMPILE = ProbeTerms("compile", "Static: TPU compile readiness", "static", ("compile-reject",),
                     examines_kernel=False)
VMEM = ProbeTerms("vmem", "Static: VMEM budget at the real problem size", "static", ("vmem-overflow",),
                  per_case=False)
STRUCTURE = ProbeTerms("structure", "Static: the work is done in a kernel", "static", ("not-a-kernel",),
                       per_case=False, examines_kernel=False)
POISONING = ProbeTerms("poisoning", "Memory poisoning: NaN and random fills", "tpu-interpret",
                       ("uninitialized-memory", "padding-dependence"))
GRID_ORDER = ProbeTerms("grid-order", "Grid order: shuffled parallel axes, two cores", "tpu-interpret",
                        ("grid-order-dependence",), keys=frozenset({"seeds"}), read_settings=read_seeds)
RACES = ProbeTerms("races", "Races and DMA protocol", "tpu-interpret",
                   ("data-race", "dma-protocol", "grid-order-dependence"))
NUMERICS = ProbeTerms("numerics", "Numerics: stress inputs (large values, long reductions, bfloat16)",
                      "generic", ("numerics", "wrong-result"), per_case=False, keys=frozenset({"stress"}),
                      read_settings=read_stress)

PROBES: dict[str, ProbeTerms] = {t.name: t for t in (
    INDEX_MAPS, COMPILE, VMEM, STRUCTURE, POISONING, GRID_ORDER, RACES, NUMERICS)}
