"""The run plan: every child run of one grading, built in one place.

A ``Run`` is one execution in the child: one traced input signature, one rung
(or a static analysis), one set of interpreter switches. It carries what the
child needs (``Run.to_child``, the only thing that crosses) and what the report
later shows: the graded case, the inputs' seed and stream, the interpreter
parameters, the stress variant, and the probe that asked for it. Outcomes are
keyed by ``Run``; nothing is re-identified by parsing names back.

A ``Draw`` is one draw of inputs (seed words, stream, the case as run); runs
that share a draw get the same data, runs whose draws share a signature
(shapes, dtypes, static parameters) share one trace in the child.

Order: static analyses first (cheap, and their facts can settle dynamic probes
before those run), then the correctness runs, then the dynamic probes.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Callable, Mapping

from ...spec import Assignment, Case, ProbeRubric, Stress
from . import draws, inputs
from .fills import test_fill, unwritten_fills
from .runs import ChecksRun, Draw, Run, Variant

PRODUCTION = "production"      # the draw of the VMEM budget: abstract shapes at the real size
SPEED = "speed"                # the speed estimate's runs (not a probe: shown, scored by its curve)
# The index-map scan of every visible case (not a probe: no test of its own):
# the feedback's block maps cut each case's output into the kernel's blocks.
BLOCK_MAP = "block-map"
# Each correctness test's own check for memory the kernel never writes (not a
# probe: no test of its own): the test's inputs rerun on the generic
# interpreter with two fills, only when the test fails (see ``grading.unwritten``).
UNWRITTEN = "unwritten"
# A visible test's inputs altered, rerun when the test fails (``_altered``): one element
# changed, and every block of the reduction alike (``draws.ALTERED``).
NUDGED, STEADY = "nudged", "steady"


@dataclass(frozen=True)
class Partial:
    """A check a replay runs on less than the whole grading gives it: finding nothing
    there is no pass (``grading.grade`` says it was not run in full)."""
    probe: str
    cases_out: int                      # cases the whole grading also runs it on (a count: never a name)
    rungs_out: tuple[str, ...]          # rungs left out whose test runs it compares with (a dynamic check)


@dataclass(frozen=True)
class Plan:
    assignment: Assignment
    run_key: int
    cases: tuple[Case, ...]
    rungs: tuple[str, ...]
    probes: tuple[str, ...]             # probe checks planned, in rubric order
    runs: tuple[Run, ...]
    draws: tuple[Draw, ...]
    # (probe, case name, variant) -> run index: a probe may share another's run
    asks: tuple[tuple[tuple[str, str, str], int], ...] = ()
    checks: ChecksRun | None = None
    # The probe checks the whole grading lists, in order (a replay of some cases numbers its
    # checks as the whole grading does: P4 is P4); () when ``probes`` is that list.
    numbering: tuple[str, ...] = ()
    partial: tuple[Partial, ...] = ()   # a replay's checks that do not run in full
    replay: bool = False                # some cases or rungs (--case/--rung): no grade, it counts what ran

    def probe_number(self, probe: str) -> str:
        order = self.numbering or self.probes
        return f"P{order.index(probe) + 1}" if probe in order else f"P{self.probes.index(probe) + 1}"

    def test_number(self, case: Case, rung: str) -> str:
        """A correctness test's number: the case's and the rung's places in the
        spec, whatever this grading selected (a replay of one test keeps its number)."""
        names = [c.name for c in self.assignment.cases]
        ci = names.index(case.name) + 1 if case.name in names else self.cases.index(case) + 1
        rungs = self.assignment.rungs
        return f"{ci}.{rungs.index(rung) + 1 if rung in rungs else self.rungs.index(rung) + 1}"

    @cached_property
    def _tests(self) -> dict[tuple[str, str], Run]:
        return {(r.case.name, r.rung): r for r in self.runs if r.probe is None}

    @cached_property
    def _asked(self) -> dict[tuple[str, str], dict[str, Run]]:
        out: dict[tuple[str, str], dict[str, Run]] = {}
        for (probe, case, variant), index in self.asks:
            out.setdefault((probe, case), {})[variant] = self.runs[index]
        return out

    def correctness(self) -> tuple[Run, ...]:
        return tuple(r for r in self.runs if r.probe is None)

    def test_run(self, case: str, rung: str) -> Run | None:
        return self._tests.get((case, rung))

    def probe_runs(self, probe: str, case: str) -> dict[str, Run]:
        """variant -> run, for one probe on one case."""
        return dict(self._asked.get((probe, case), {}))

    def probe_cases(self, probe: str) -> tuple[Case, ...]:
        names = {c for (p, c) in self._asked if p == probe}
        return tuple(c for c in self.cases if c.name in names)

    def speed_runs(self) -> tuple[Run, ...]:
        """The speed estimate's static runs, one per ``[speed]`` size, in order."""
        return tuple(r for r in self.runs if r.probe == SPEED and (r.analysis or "").startswith("speed:"))

    def speed_checks(self, size: str) -> dict[str, Run]:
        """What vouches for one ``[speed]`` size's estimate: the index-map scan
        (do the grid and blocks cover the arrays there?) and the VMEM budget, by
        analysis (runs shared with the VMEM probe's at the production size)."""
        out: dict[str, Run] = {}
        for (probe, _case, variant), index in self.asks:
            if probe == SPEED and variant.startswith(f"{size}:"):
                out[variant.split(":", 1)[1]] = self.runs[index]
        return out


@dataclass
class _Builder:
    assignment: Assignment
    run_key: int
    limit: Callable[[Run], float]
    runs: list[Run] = field(default_factory=list)
    draws: dict[tuple, Draw] = field(default_factory=dict)
    signatures: dict[tuple, int] = field(default_factory=dict)
    asks: list[tuple[tuple[str, str, str], int]] = field(default_factory=list)

    def draw(self, case: Case, stream: int, abstract: bool = False, altered: str = "") -> Draw:
        entropy = tuple(inputs.entropy(case, self.run_key, stream))
        key = (case, entropy, stream, abstract, altered)
        if key not in self.draws:
            sig = (case.dims, case.dtype, case.params, abstract)
            signature = self.signatures.setdefault(sig, len(self.signatures))
            self.draws[key] = Draw(len(self.draws), case, entropy, stream, signature, abstract, altered)
        return self.draws[key]

    def add(self, run: Run, ask: tuple[str, str, str] | None = None) -> Run:
        same = next((r for r in self.runs if r.execution() == run.execution()), None)
        if same is None:
            same = replace(run, index=len(self.runs))
            same = replace(same, limit_s=self.limit(same))
            self.runs.append(same)
        if ask is not None:
            self.asks.append((ask, same.index))
        return same


def _production_case(a: Assignment) -> Case:
    prod = a.production
    return Case(PRODUCTION, tuple(prod.dims), prod.dtype, 0, 0.0, "hidden", a.cases[0].params)


def _variant_draw(b: _Builder, case: Case, v: Variant) -> tuple[Draw, Stress | None]:
    a = b.assignment
    if v.inputs == "production":
        return b.draw(_production_case(a), inputs.PROBE_STREAM, abstract=True), None
    if isinstance(v.inputs, Stress):
        scase = v.inputs.apply(case)
        return b.draw(scase, inputs.stream(a, scase, v.rung)), v.inputs
    # A static analysis reads the data its case's first correctness run gets
    # (scalar-prefetch values drive index maps).
    rung = v.rung if v.rung in a.rungs else a.rungs[0]
    return b.draw(case, inputs.stream(a, case, rung)), None


def numerics_case(a: Assignment, cases: tuple[Case, ...]) -> list[Case]:
    """The probe case: the one the numerics stress inputs are built on, and the one
    grid order runs every seed on (``probes.grid_order``): the first of the spec's
    ``probe_cases`` graded here (the first case graded when none is)."""
    named = [c for c in cases if c.name in a.probe_cases]
    return (named or list(cases))[:1]


# A probe's planner: the variants it asks for on one case, given the grading's
# secret run key (a probe may draw from it), see ``probes.PLANNERS``.
Planner = Callable[[Assignment, Case, ProbeRubric, int], tuple["Variant", ...]]


def _planned(assignment: Assignment, cases: tuple[Case, ...], planners: Mapping[str, Planner],
             run_key: int) -> list[tuple[str, Case, "Variant"]]:
    planned: list[tuple[str, Case, Variant]] = []
    for rubric in assignment.probes if cases else ():
        terms = rubric.terms
        planner = planners[rubric.name]
        for case in cases if terms.per_case or terms.rung == "static" else numerics_case(assignment, cases):
            planned += [(rubric.name, case, v) for v in planner(assignment, case, rubric, run_key)
                        if v.inputs != "production" or case is cases[0]]
    return planned


def build(assignment: Assignment, cases: tuple[Case, ...], rungs: tuple[str, ...], run_key: int,
          *, planners: Mapping[str, Planner] | None = None,
          limit: Callable[[Run], float] | None = None, replay: bool = False) -> Plan:
    """Every run of one grading: the correctness runs of ``cases`` x ``rungs``
    and, given the probes' planners, every enabled probe's runs on every case
    graded, visible and secret (and the speed estimate's and custom checks'
    runs). A function cannot show one kernel where a check looks and another
    where the points are: every check that can run on a graded case runs on
    each; the numerics probe, whose inputs are stress inputs of their own, on
    the one case they are built on. ``replay``: some of the cases and rungs, with
    every check that runs on them (what explains a test's failure), numbered as
    the whole grading numbers them; no speed estimate or instructor checks."""
    with_probes = planners is not None
    b = _Builder(assignment, run_key, limit or (lambda run: assignment.limits.case_s))
    planned = _planned(assignment, cases, planners, run_key) if with_probes else []
    for probe, case, v in [p for p in planned if p[2].rung == "static"]:
        _add_variant(b, probe, case, v)
    if with_probes:
        _block_maps(b, cases, rungs)
        if not replay:
            _speed(b)
    # The race detector rides on each case's own test run in TPU interpret mode (it
    # changes nothing a kernel computes): the races probe's one-core run is that run.
    detect = with_probes and any(p.name == "races" for p in assignment.probes)
    for case in cases:
        for rung in rungs:
            on = detect and rung == "tpu-interpret"
            b.add(Run(0, case, rung, b.draw(case, inputs.stream(assignment, case, rung)), fill=test_fill(run_key),
                      races=on, capture=on))
    if with_probes:
        _unwritten(b, cases, rungs)
    for probe, case, v in [p for p in planned if p[2].rung != "static"]:
        _add_variant(b, probe, case, v)
    if with_probes:     # (last: words for a fix never hold up a run that scores)
        _altered(b, cases, rungs)
    checks = _checks(b, rungs) if with_probes and assignment.checks and not replay else None
    whole = _planned(assignment, assignment.cases, planners, run_key) if with_probes and replay else []
    return Plan(assignment, run_key, tuple(cases), tuple(rungs),
                tuple(dict.fromkeys(p for p, _c, _v in planned)), tuple(b.runs),
                tuple(b.draws.values()), tuple(b.asks), checks, tuple(dict.fromkeys(p for p, _c, _v in whole)),
                _partial(assignment, planned, whole, rungs) if replay else (), replay)


def _partial(assignment: Assignment, planned: list, whole: list, rungs: tuple[str, ...]) -> tuple[Partial, ...]:
    """The checks a replay (``planned``) runs on less than the whole grading
    (``whole``): on fewer cases, or (one that runs the kernel) without a rung's test
    runs, which each dynamic judge compares with (grid order the generic one's)."""
    def asks(of: list) -> dict[str, set]:
        out: dict[str, set] = {}
        for probe, case, v in of:   # (the production size's run is one, whatever case plans it)
            out.setdefault(probe, set()).add((case.name if v.inputs != "production" else "", v.name))
        return out

    mine, full = asks(planned), asks(whole)
    rungs_out = tuple(r for r in assignment.rungs if r not in rungs)
    out = []
    for probe in dict.fromkeys(p for p, _c, _v in planned):
        lost = full.get(probe, set()) - mine[probe]
        dynamic = assignment.probe(probe).terms.dynamic
        if lost or (dynamic and rungs_out):
            out.append(Partial(probe, len({case for case, _v in lost if case}), rungs_out if dynamic else ()))
    return tuple(out)


def speed_case(a: Assignment, size) -> Case:
    """The case a ``[speed]`` size is traced as (the production size's is the VMEM probe's)."""
    if a.production is not None and size.dims == a.production.dims and size.dtype == a.production.dtype:
        return _production_case(a)
    return Case(size.name, size.dims, size.dtype, 0, 0.0, "hidden", a.cases[0].params)


def _speed(b: _Builder) -> None:
    """The speed estimate: the schedule's facts at each size (abstract shapes; static, so early),
    and what vouches for them there: an index-map scan and the VMEM budget."""
    a = b.assignment
    for size in a.speed.sizes if a.speed else ():
        case = speed_case(a, size)
        draw = b.draw(case, inputs.PROBE_STREAM, abstract=True)
        b.add(Run(0, case, "static", draw, f"speed:{a.speed.chip}", probe=SPEED, variant=size.name))
        for analysis in ("index-maps", "vmem"):
            b.add(Run(0, case, "static", draw, analysis, probe=SPEED, variant=f"{size.name}:{analysis}"),
                  ask=(SPEED, case.name, f"{size.name}:{analysis}"))


def _unwritten(b: _Builder, cases: tuple[Case, ...], rungs: tuple[str, ...]) -> None:
    """Each correctness test's own inputs, rerun on the generic interpreter with
    two fills: what changes is what the kernel never wrote (on that very case);
    and a third time with the first fill but the second (128 times smaller) in the
    padding of partial blocks only: it tells the padding an input's partial block
    adds to a sum from memory the kernel never wrote (against the second rerun only
    that memory differs, with the padding small; against the first only the padding).
    The schedule runs them only for a test that failed with an output."""
    for case in cases:
        for rung in rungs:
            draw = b.draw(case, inputs.stream(b.assignment, case, rung))
            first, second = unwritten_fills(b.run_key)
            for fill in (first, second):
                b.add(Run(0, case, "generic", draw, fill=fill, probe=UNWRITTEN, variant=f"{fill.name}-{rung}"))
            b.add(Run(0, case, "generic", draw, fill=first, pad_fill=second, probe=UNWRITTEN,
                      variant=f"{first.name}-padding-{second.name}-{rung}"))


def _altered(b: _Builder, cases: tuple[Case, ...], rungs: tuple[str, ...]) -> None:
    """Each visible case's generic test's inputs altered, on the generic interpreter:
    one element changed (outputs that move where the reference's stay put show which
    axis the kernel mixes: a reduction along the wrong axis), and every block of the
    reduction alike (right there: what carries from step to step is the fault). Evidence
    for a wrong result's fix, never a charge; the schedule runs them only for a test
    that failed. (Same shapes as the test: no trace of their own.)"""
    for case in cases:
        if not case.visible:
            continue
        stream = inputs.stream(b.assignment, case, "generic")
        if "generic" not in rungs:
            # The nudged rerun is compared with its generic test's run, bit for bit: where
            # this grading (a replay of another rung) has none, that run too.
            b.add(Run(0, case, "generic", b.draw(case, stream), fill=test_fill(b.run_key), probe=NUDGED,
                      variant="unnudged"))
        for kind in (NUDGED, STEADY) if draws.steady_period(b.assignment, case) else (NUDGED,):
            draw = b.draw(case, stream, altered=kind)
            b.add(Run(0, case, "generic", draw, fill=test_fill(b.run_key), probe=kind, variant=kind))


def altered_run(plan: "Plan", test: Run, kind: str) -> Run | None:
    """The rerun of a test's inputs altered as ``kind`` says ("": the generic run of the
    same inputs a nudged rerun is compared with), if the plan has one."""
    if not kind:
        same = plan.test_run(test.case.name, "generic")
        if same is not None and same.draw == test.draw:
            return same
    return next((r for r in plan.runs if r.probe in (kind, NUDGED) and r.draw.altered == kind
                 and _base(r.draw) == _base(test.draw)), None)


def _base(d: Draw) -> tuple:
    return d.case, d.entropy, d.stream, d.abstract


def unwritten_runs(plan: "Plan", test: Run) -> tuple[Run, ...]:
    """The fill reruns of one correctness test (its draw, the generic interpreter):
    the two fills, then the second fill with the first in the padding."""
    return tuple(r for r in plan.runs if r.probe == UNWRITTEN and r.draw == test.draw)


def unwritten_tests(plan: "Plan", run: Run) -> tuple[Run, ...]:
    """The correctness tests a fill rerun serves (tests that share its draw)."""
    return tuple(t for t in plan.correctness() if _base(t.draw) == _base(run.draw))


def _block_maps(b: _Builder, cases: tuple[Case, ...], rungs: tuple[str, ...]) -> None:
    """A static index-map scan of each visible case, on its correctness draw: a
    probe case's is the index-map probe's own run (shared, not run twice)."""
    for case in cases:
        if case.visible and rungs:
            draw = b.draw(case, inputs.stream(b.assignment, case, rungs[0]))
            b.add(Run(0, case, "static", draw, "index-maps", probe=BLOCK_MAP, variant="index-maps"))


def scans(plan: "Plan", outcomes: Mapping[Run, Any]) -> dict[str, Any]:
    """Each case's index-map facts, from whichever run scanned the case's own
    shapes (a stress input's scan is its own): case name -> facts."""
    out: dict[str, Any] = {}
    for run in plan.runs:
        o = outcomes.get(run)
        if run.analysis == "index-maps" and run.stress is None and o is not None and o.status == "ok":
            out.setdefault(run.case.name, o.facts)
    return out


def _checks(b: _Builder, rungs: tuple[str, ...]) -> ChecksRun:
    """The custom checks' run: every signature a correctness run traces."""
    a = b.assignment
    sigs: dict[int, tuple] = {}
    for run in b.runs:
        if run.probe is None and run.draw.signature not in sigs:
            case = run.draw.case
            sigs[run.draw.signature] = tuple((a.shape(i.shape, case), a.dtype_of(i.dtype, case))
                                             for i in a.inputs if i.kind != "float")
    return ChecksRun(a.checks.file, tuple(sigs.items()), rungs, a.checks.limit_s)


def _add_variant(b: _Builder, probe: str, case: Case, v: Variant) -> None:
    draw, stress = _variant_draw(b, case, v)
    # A probe run looks like a test run: the test's fill, unless the fill is what it varies.
    fill = None if v.rung == "static" else v.fill or test_fill(b.run_key)
    b.add(Run(0, case, v.rung, draw, v.analysis, v.params, fill, v.record, v.races, v.capture,
              v.in_order, probe, v.name, stress), ask=(probe, case.name, v.name))


def analysis_plan(assignment: Assignment, case: Case, analysis: str) -> Plan:
    """One static analysis of the submission traced on ``case``'s shapes only
    (abstract: no data), and nothing else (the `estimate` verb)."""
    b = _Builder(assignment, 0, lambda run: assignment.limits.case_s)
    draw = b.draw(case, inputs.PROBE_STREAM, abstract=True)
    b.add(Run(0, case, "static", draw, analysis, probe="estimate", variant=analysis))
    return Plan(assignment, 0, (case,), (), (), tuple(b.runs), tuple(b.draws.values()))


def speed_plan(assignment: Assignment) -> Plan:
    """What the TPU stage needs of a kernel: its programs at every ``[speed]``
    size (and their schedule facts), and at the first case, which it checks on
    the chip; one correctness run there (the `speed` verb's solution)."""
    b = _Builder(assignment, 0, lambda run: assignment.limits.case_s)
    case, rung = assignment.cases[0], assignment.rungs[0]
    b.add(Run(0, case, rung, b.draw(case, inputs.stream(assignment, case, rung)), fill=test_fill(0)))
    _speed(b)
    return Plan(assignment, 0, (case,), (rung,), (), tuple(b.runs), tuple(b.draws.values()), tuple(b.asks))


def merged(plans: list[Plan], redrawn: Callable[[Run], bool]) -> tuple[Plan, list[dict[Run, Run]]]:
    """Several gradings' plans (one per run key) as one plan the children run in
    one go: one trace per signature, one compiled executable per rung and
    parameters for every key. The first plan runs in full; of a later plan, the
    runs ``redrawn`` names run on that key's draws, a static analysis it does
    not name is answered by the first plan's of the same case, and any other run
    is left out of its map (not run). Returns the merged plan and, per plan,
    its runs -> the merged runs."""
    signatures: dict[tuple, int] = {}
    draws: dict[tuple, Draw] = {}
    runs: list[Run] = []
    first: dict[tuple, Run] = {}
    maps: list[dict[Run, Run]] = []

    def draw(d: Draw) -> Draw:
        key = (d.case, d.entropy, d.stream, d.abstract, d.altered)
        if key not in draws:
            sig = signatures.setdefault((d.case.dims, d.case.dtype, d.case.params, d.abstract), len(signatures))
            draws[key] = replace(d, index=len(draws), signature=sig)
        return draws[key]

    for i, p in enumerate(plans):
        m: dict[Run, Run] = {}
        for r in p.runs:
            same = (r.case, r.probe, r.variant, r.analysis, r.stress, r.draw.case)
            if i and not redrawn(r):
                if r.kind == "static" and same in first:
                    m[r] = first[same]
                continue
            new = replace(r, index=len(runs), draw=draw(r.draw))
            runs.append(new)
            m[r] = new
            if i == 0 and r.kind == "static":
                first[same] = new
        maps.append(m)
    p0 = plans[0]
    return Plan(p0.assignment, p0.run_key, p0.cases, p0.rungs, (), tuple(runs), tuple(draws.values())), maps
