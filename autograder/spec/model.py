"""The assignment spec as frozen dataclasses (what ``spec.toml`` says, validated)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, get_args

from ..pallas_surface import release
from .vocabulary import ProbeTerms

DTYPES = ("float32", "bfloat16", "float16", "int32")
# Gradescope's visibility values: for tests, cases, probes, stdout and results.json alike.
VISIBILITIES: tuple[str, ...] = ("visible", "hidden", "after_due_date", "after_published")
DISTRIBUTIONS = ("normal", "uniform")
# Rungs that can grade correctness on a CPU-only machine.
CPU_RUNGS = ("generic", "tpu-interpret")
STRUCTURE_TECHNIQUES = ("manual-dma",)
# Gradescope's timeout also covers starting the container and writing results.
GRADESCOPE_MARGIN_S = 60.0


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
    kind: Literal["array", "float"]   # "float": a static Python float
    shape: tuple[str, ...] = ()
    dtype: str = "case"               # a dtype name, or "case" to take the case's dtype
    distribution: str = "normal"
    scale: float = 1.0


@dataclass(frozen=True)
class OutputSpec:
    shape: tuple[str, ...]
    dtype: str                        # a dtype name, or "case"


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float                       # multiplied by sqrt(reduction length)


@dataclass(frozen=True)
class Limits:
    """Ceilings: a run's own limit is derived from the instructor solution's
    measured time (``calibration``) and never exceeds these."""
    startup_s: float = 120.0          # importing JAX and the submission, once per child
    case_s: float = 60.0              # one case on one rung
    memory_mb: int = 600              # resident memory of the child and all it starts
    total_s: float = 540.0            # the whole grading run
    gradescope_timeout_s: float = 600.0   # the assignment's Gradescope timeout


@dataclass(frozen=True)
class Stress:
    """numerics: one stress input, the probe case with some dims, dtype or input
    scales replaced (long reductions, bfloat16, large-magnitude values)."""
    name: str
    dims: tuple[tuple[str, int], ...] = ()
    dtype: str | None = None
    scale: tuple[tuple[str, float], ...] = ()
    # This input's own tolerance (default: its dtype's): large logits amplify a
    # correct kernel's float32 rounding, so a stress input may need a wider one,
    # measured over the run-key distribution (`check --run-keys`).
    tolerance: Tolerance | None = None

    def apply(self, case: Case) -> Case:
        """The case this stress input runs: ``case`` with the overrides."""
        return replace(case, name=f"{case.name}+{self.name}",
                       dims=tuple(sorted({**case.dim_map, **dict(self.dims)}.items())),
                       dtype=self.dtype or case.dtype, tolerance=self.tolerance,   # its own, not the case's
                       scale=tuple(sorted({**dict(case.scale), **dict(self.scale)}.items())))

    def describe(self) -> str:
        parts = [f"{k}={v}" for k, v in self.dims]
        if self.dtype:
            parts.append(self.dtype)
        parts += [f"{k} scaled by {v:g}" for k, v in self.scale]
        return ", ".join(parts) or self.name


@dataclass(frozen=True)
class ProbeRubric:
    """One enabled probe: the terms it was read by (what the probe is), its points
    and visibility, and the settings its own keys hold (each probe reads its keys,
    see ``autograder.grading.probes``)."""
    terms: ProbeTerms
    points: float
    visibility: str = "visible"
    settings: Any = None
    gates: tuple[str, ...] = ()       # "correctness" or probe names: earn nothing while this check fails

    @property
    def name(self) -> str:
        return self.terms.name


@dataclass(frozen=True)
class Production:
    """The real problem size, traced with abstract shapes only (never run)."""
    dims: tuple[tuple[str, int], ...]
    dtype: str
    vmem_limit_bytes: int
    chip: str


@dataclass(frozen=True)
class Structure:
    # Glue allowed on data outside every kernel, besides moving it (pallas_surface.outside):
    # primitive names, or 'data-index' / 'data-control' (a position or a decision read from data).
    allow: tuple[str, ...] = ()
    require: tuple[str, ...] = ()     # techniques the kernel must use
    # While the work is done outside the kernel, the probes that examine the
    # kernel's behaviour examined a copy: they earn nothing (a spec may grant them).
    probes_need_kernel: bool = True


@dataclass(frozen=True)
class Checks:
    """The instructor's own unittest checks (gradescope-utils decorators), run
    in the grader's child against the rebuilt kernel, never beside student code."""
    file: str                         # a .py file in the assignment folder
    limit_s: float = 120.0            # the whole suite's wall clock


@dataclass(frozen=True)
class SpeedSize:
    """One shape the kernel's speed is estimated (and timed on a TPU) at."""
    name: str
    dims: tuple[tuple[str, int], ...]
    dtype: str


Chip = Literal["v4", "v5e", "v5p", "v6e"]     # the names JAX's TPU table knows
CHIPS: tuple[str, ...] = get_args(Chip)


@dataclass(frozen=True)
class Speed:
    """``[speed]``: the TPU time estimate shown in every grading and the TPU
    stage's timing. Both are scored against the instructor solution with one
    curve: (speed relative to the solution, share of the points), linear in
    between, flat outside; 0 points shows them without scoring."""
    chip: Chip = "v5e"
    sizes: tuple[SpeedSize, ...] = ()
    points: float = 0.0                   # the estimate's (CPU grading)
    tpu_points: float = 0.0               # the TPU stage's (``speed``, merged later)
    curve: tuple[tuple[float, float], ...] = ((0.25, 0.0), (1.0, 1.0))
    leaderboard: bool = False             # put the time on Gradescope's leaderboard
    visibility: str = "visible"

    def share(self, relative: float) -> float:
        """The curve at ``relative`` (solution time / the kernel's time)."""
        pts = self.curve
        if relative <= pts[0][0]:
            return pts[0][1]
        for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
            if relative <= x1:
                return y0 + (y1 - y0) * (relative - x0) / (x1 - x0)
        return pts[-1][1]


@dataclass(frozen=True)
class Case:
    name: str
    dims: tuple[tuple[str, int], ...]
    dtype: str
    seed: int
    points: float
    visibility: str = "visible"       # Gradescope's: when the student sees the test at all
    params: tuple[tuple[str, float], ...] = ()
    scale: tuple[tuple[str, float], ...] = ()   # per-input overrides of InputSpec.scale
    secret: bool = False              # its data (shapes, seed, values) is never shown
    partial_edge_block: bool = False  # claimed: a partial block at an edge (`check` verifies)
    # Its own tolerance (default: its dtype's): large-magnitude inputs make a correct
    # float32 formula round at that magnitude (x - (max + log(sum)) at logits of 300).
    tolerance: Tolerance | None = None

    @property
    def dim_map(self) -> dict[str, int]:
        return dict(self.dims)

    @property
    def visible(self) -> bool:
        """Whether the case's data may be shown (its test may still be listed when secret)."""
        return not self.secret


@dataclass(frozen=True)
class Assignment:
    slug: str
    folder: Path
    title: str
    entry_file: str
    entry_function: str
    reference: str                    # "file.py:function" inside the assignment folder
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
    probe_cases: tuple[str, ...] = ()   # the first: the case the numerics stress inputs are built on
    production: Production | None = None
    structure: Structure = Structure()
    stdout_visibility: str = "hidden"  # Gradescope's: who sees the grader's own stdout
    numerics_hint: str = ""           # the assignment's own advice for a precision problem
    checks: Checks | None = None      # custom checks (``[checks]``), Gradescope-style tests
    speed: Speed | None = None        # the speed estimate and TPU stage (``[speed]``)
    # The JAX release the course grades on (``jax = "0.10.2"``; the newest supported by
    # default; ``build --jax`` and ``handout --jax`` write it into what they ship).
    jax: str = release.NEWEST

    def probe(self, name: str) -> ProbeRubric | None:
        return next((p for p in self.probes if p.name == name), None)

    def tolerance(self, of: "str | Case") -> Tolerance:
        """A dtype's tolerance, or a case's: its own where the spec gives one."""
        if isinstance(of, Case):
            return of.tolerance or dict(self.tolerances)[of.dtype]
        return dict(self.tolerances)[of]

    @property
    def solution(self) -> Path:
        """The instructor's solution: ``solutions/<slug>.py`` beside the assignments folder."""
        return self.folder.parent.parent / "solutions" / f"{self.slug}.py"

    def case(self, name: str) -> Case:
        for c in self.cases:
            if c.name == name:
                return c
        raise KeyError(name)

    def shape(self, names: tuple[str, ...], case: Case) -> tuple[int, ...]:
        dims = case.dim_map
        return tuple(dims[n] for n in names)

    def output_shape(self, case: Case) -> tuple[int, ...]:
        return self.shape(self.output.shape, case)

    def dtype_of(self, declared: str, case: Case) -> str:
        return case.dtype if declared == "case" else declared

    def reduction_length(self, case: Case) -> int:
        return case.dim_map[self.reduction_dim] if self.reduction_dim else 1
