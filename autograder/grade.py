"""The `grade` verb: one submission through every rung, to a scored report.

Data flows one way: submission -> child process (runs the kernel on each rung)
-> parent (reference, comparison, diagnosis) -> findings -> scored tests. This
module imports no JAX; the reference is float64 numpy run here, in the parent.
"""
from __future__ import annotations

import importlib.util
import os
import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import confinement, diagnosis, inputs, sandbox, scoring, submission
from .findings import Finding
from .spec import Assignment, Case


@dataclass(frozen=True)
class GradeOptions:
    cases: tuple[str, ...] = ()         # empty: every case
    rungs: tuple[str, ...] = ()         # empty: the spec's rungs
    case_timeout_s: float | None = None
    startup_timeout_s: float | None = None
    run_key: int | None = None          # None: a fresh secret key (replay one with --run-key)


@dataclass
class Report:
    assignment: Assignment
    submission: str
    tests: list[scoring.TestResult]
    findings: list[Finding]
    uploaded_as: str | None
    seconds: float
    jax_version: str | None = None
    children: int = 0
    peak_child_rss_mb: float = 0.0
    student_output: str = ""
    run_key: int | None = None
    notes: list[str] = field(default_factory=list)   # said once, at the top of the feedback
    output_bytes: int = 0
    leftovers_killed: int = 0
    student_uid: int | None = None     # the uid student code ran as (staff data)

    @property
    def score(self) -> float:
        return sum(t.score for t in self.tests)

    @property
    def max_score(self) -> float:
        return sum(t.max_score for t in self.tests)

    @property
    def wide_findings(self) -> list[Finding]:
        return [f for f in self.findings if f.case is None]


def load_reference(assignment: Assignment):
    """The instructor's float64 numpy reference (trusted code, run in the parent)."""
    file, _, fn = assignment.reference.partition(":")
    path = assignment.folder / file
    spec = importlib.util.spec_from_file_location(f"_reference_{assignment.slug}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, fn)


def select(assignment: Assignment, options: GradeOptions) -> tuple[tuple[Case, ...], tuple[str, ...]]:
    for name in options.cases:
        assignment.case(name)  # KeyError names the unknown case
    cases = tuple(c for c in assignment.cases if not options.cases or c.name in options.cases)
    for rung in options.rungs:
        if rung not in assignment.rungs:
            raise KeyError(rung)
    rungs = tuple(r for r in assignment.rungs if not options.rungs or r in options.rungs)
    return cases, rungs


def grade(assignment: Assignment, submission_path: Path, options: GradeOptions = GradeOptions()) -> Report:
    with confinement.student_slot() as identity:
        confinement.make_reachable(identity)
        report = _grade_as(identity, assignment, submission_path, options)
        report.student_uid = identity.uid
        return report


def _grade_as(identity: confinement.Identity, assignment: Assignment, submission_path: Path,
              options: GradeOptions) -> Report:
    t0 = time.monotonic()
    # The child runs in its own working directory: a relative path would not resolve there.
    submission_path = Path(submission_path).absolute()
    limits = assignment.limits
    deadline = t0 + limits.total_s
    cases, rungs = select(assignment, options)
    run_key = options.run_key if options.run_key is not None else secrets.randbits(32)
    confinement.guard_grader()
    notes = [identity.note] if identity.note else []
    workdir = Path(tempfile.mkdtemp(prefix="pallas-grade-"))
    os.chmod(workdir, 0o711)    # the student user may enter, not list
    try:
        findings: list[Finding] = []
        loc, skipped = submission.prepare(Path(submission_path), assignment.entry_file, workdir)
        if skipped:
            notes.append("Not copied from your upload: " + "; ".join(skipped[:10])
                         + (f"; and {len(skipped) - 10} more" if len(skipped) > 10 else "") + ".")
        if isinstance(loc, Finding):
            return _finish(assignment, submission_path, [loc], cases, rungs, None, t0,
                           run_key=run_key, notes=notes)
        problem = submission.check_source(loc)
        if problem is not None:
            return _finish(assignment, submission_path, [problem], cases, rungs, loc, t0,
                           run_key=run_key, notes=notes)

        reference_fn = load_reference(assignment)
        in_dir, out_dir = workdir / "in", workdir / "out"
        in_dir.mkdir()
        confinement.give_to(out_dir, identity)
        runs, references, run_refs = [], {}, {}
        for case in cases:
            drawn: dict[int, tuple[list, np.ndarray]] = {}
            for rung in rungs:
                stream = inputs.stream(assignment, case, rung)
                if stream not in drawn:
                    drawn[stream] = _draw(assignment, case, inputs.entropy(case, run_key, stream),
                                          in_dir, f"{len(run_refs)}", reference_fn)
                files, ref = drawn[stream]
                rid = f"{case.name}/{rung}"
                run_refs[rid] = ref
                runs.append({"id": rid, "id_file": f"{len(runs)}",
                             "case": case.name, "rung": rung, "params": {}, "inputs": files})
            if inputs.PROBE_STREAM in drawn:     # a probe case: every run shares one draw
                references[case.name] = drawn[inputs.PROBE_STREAM]
        def draw(case: Case, rung: str, tag: str):
            seed = inputs.entropy(case, run_key, inputs.stream(assignment, case, rung))
            return _draw(assignment, case, seed, in_dir, tag, reference_fn)

        probe_runs, own_refs = _plan_probes(assignment, cases, options, runs,
                                            {k: v[0] for k, v in references.items()}, draw)
        runs.extend(probe_runs)
        for folder in ("submission", "unzipped", "notebook", "in"):
            confinement.readable_by_all(workdir / folder)
        base_job = {"module_file": str(loc.module_file), "module_dir": str(loc.module_dir),
                    "module_name": Path(assignment.entry_file).stem,
                    "function": assignment.entry_function, "arity": len(assignment.inputs),
                    "out_dir": str(out_dir)}
        report = sandbox.run_jobs(
            workdir, base_job, runs,
            startup_s=options.startup_timeout_s or limits.startup_s,
            run_s=options.case_timeout_s or limits.case_s,
            memory_mb=limits.memory_mb, deadline=deadline, identity=identity)
        if report.tampered:
            findings.append(Finding.make(
                "submission-error", "static", f"the grader's channel was tampered with: {report.tampered}",
                check="submission", problem="channel-tampered", detail=report.tampered))
        elif report.load_error is not None:
            findings.append(diagnosis.from_load_error(
                report.load_error, loc, options.startup_timeout_s or limits.startup_s,
                limits.memory_mb))
        probe_refs = {name: ref for name, (_files, ref) in references.items()}
        findings.extend(_judge_probes(assignment, probe_runs, report, {**probe_refs, **own_refs},
                                      out_dir))
        for run in runs:
            if run.get("probe"):
                continue
            case = assignment.case(run["case"])
            f = diagnosis.from_outcome(assignment, case, run["rung"], report.outcomes[run["id"]],
                                       run_refs[run["id"]], loc, out_dir)
            if f is not None:
                findings.append(f)
        probes_run = tuple(dict.fromkeys(r["probe"] for r in probe_runs))
        result = _finish(assignment, submission_path, findings, cases, rungs, loc, t0, probes_run,
                         run_key=run_key, notes=notes)
        result.jax_version = report.jax_version
        result.children = report.children
        result.peak_child_rss_mb = report.peak_rss_mb
        result.student_output = report.stdout_tail.strip()
        result.output_bytes = report.output_bytes
        result.leftovers_killed = report.leftovers_killed
        return result
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        confinement.remove_files_of(identity)


def _draw(assignment: Assignment, case: Case, seed: list[int], in_dir: Path, tag: str,
          reference_fn) -> tuple[list[dict], np.ndarray]:
    """One draw of a case's inputs: the files the child reads, and the reference."""
    case_inputs = inputs.make(assignment, case, seed)
    files = []
    for i, ci in enumerate(case_inputs):
        if ci.kind == "float":
            files.append({"kind": "float", "value": ci.value})
            continue
        path = in_dir / f"{tag}_{i}.npy"
        np.save(path, ci.array, allow_pickle=False)
        files.append({"kind": "array", "file": str(path), "dtype": ci.dtype})
    reference = np.asarray(
        reference_fn(*[ci.array if ci.kind == "array" else ci.value for ci in case_inputs]),
        dtype=np.float64)
    return files, reference


def _plan_probes(assignment: Assignment, cases, options: GradeOptions, runs: list[dict],
                 by_case: dict[str, list[dict]], draw) -> tuple[list[dict], dict[str, np.ndarray]]:
    """Child runs for every enabled probe on every probe case being graded, and
    the references of runs with inputs of their own (numerics stress).
    ``by_case`` holds each case's probe-stream input files; ``draw(case, rung,
    tag)`` draws inputs for another case."""
    from .probes import REGISTRY
    own_refs: dict[str, np.ndarray] = {}
    if options.cases or options.rungs:
        return [], own_refs   # a local, selective run: correctness only
    probe_cases = [c for c in cases if c.name in assignment.probe_cases and c.name in by_case]
    planned = []
    for rubric in assignment.probes:
        probe = REGISTRY[rubric.name]
        for case in probe_cases if probe.per_case else probe_cases[:1]:
            for spec in probe.plan(assignment, case, rubric):
                run = {**spec, "id": f"{case.name}/{probe.name}/{spec['variant']}",
                       "id_file": f"p{len(runs) + len(planned)}", "case": case.name,
                       "probe": probe.name, "inputs": by_case[case.name]}
                if spec.get("abstract"):
                    run["inputs"] = _abstract_inputs(assignment)
                    run["case"] = "production"
                if spec.get("stress"):
                    # Inputs of their own (keyed apart in the child's per-case trace
                    # cache); their reference is kept for the judge.
                    stress = next(s for s in rubric.stress if s.name == spec["stress"])
                    scase = assignment.stress_case(case, stress)
                    run["inputs"], own_refs[run["id"]] = draw(scase, spec["rung"], f"stress{len(planned)}")
                    run["case"] = scase.name
                planned.append(run)
    return planned, own_refs


def _abstract_inputs(assignment: Assignment) -> list[dict]:
    prod = assignment.production
    dims = dict(prod.dims)
    params = dict(assignment.cases[0].params)
    out = []
    for spec in assignment.inputs:
        if spec.kind == "float":
            out.append({"kind": "float", "value": params[spec.name]})
        else:
            dtype = prod.dtype if spec.dtype == "case" else spec.dtype
            out.append({"kind": "array", "shape": [dims[d] for d in spec.shape], "dtype": dtype})
    return out


def _judge_probes(assignment: Assignment, probe_runs: list[dict], report, references: dict,
                  out_dir: Path) -> list[Finding]:
    from .probes import REGISTRY, ProbeResults
    groups: dict[tuple[str, str], dict] = {}
    stress: dict[tuple[str, str], dict] = {}
    dynamic: dict[tuple[str, str], set] = {}     # the variants that run the kernel
    for run in probe_runs:
        case = run["id"].split("/")[0]
        groups.setdefault((run["probe"], case), {})[run["variant"]] = report.outcomes.get(run["id"])
        if run.get("kind") != "static":
            dynamic.setdefault((run["probe"], case), set()).add(run["variant"])
        if run.get("stress"):
            spec = next(x for x in assignment.probe(run["probe"]).stress if x.name == run["stress"])
            stress.setdefault((run["probe"], case), {})[run["variant"]] = (
                assignment.stress_case(assignment.case(case), spec), references[run["id"]])
    found = []
    for (name, case_name), outcomes in groups.items():
        probe = REGISTRY[name]
        case = assignment.case(case_name)
        correctness = {rung: report.outcomes.get(f"{case_name}/{rung}") for rung in assignment.rungs}
        results = ProbeResults(assignment, case, assignment.probe(name), references[case_name], out_dir,
                               {k: v for k, v in outcomes.items() if v is not None},
                               {k: v for k, v in correctness.items() if v is not None},
                               probe_rung=probe.rung, check=name,
                               stress=stress.get((name, case_name), {}))
        judged = probe.judge(results)
        # A dynamic probe's helper static run (e.g. poisoning's index-map scan) working
        # does not make the check: its kernel runs must have produced something.
        deciding = dynamic.get((name, case_name)) or set(results.outcomes)
        deciding_outcomes = [o for v, o in results.outcomes.items() if v in deciding]
        if not judged and not any(o.status == "ok" for o in deciding_outcomes):
            # Nothing to judge (the code hung, raised or was not run): no points for the
            # check, unless its runs hit a bug the error table names (e.g. an
            # out-of-bounds block): that bug is the finding, and it is charged once.
            known = next((f for o in deciding_outcomes if o.status == "error"
                          for f in [diagnosis.known_error(o.event, probe.rung, case_name, check=name)]
                          if f is not None), None)
            reasons = sorted({o.status for o in deciding_outcomes}) or ["not run"]
            judged = [known or Finding.make("submission-error", probe.rung,
                                            f"this check could not run ({', '.join(reasons)})",
                                            case=case_name, check=name, problem="check-not-run")]
        found.extend(judged)
    return found


def _finish(assignment, submission_path, findings, cases, rungs, loc, t0, probes=(), *,
            run_key=None, notes=()) -> Report:
    tests = scoring.score(assignment, findings, rungs, cases, probes)
    return Report(assignment, str(submission_path), tests, findings,
                  loc.uploaded_as if loc else None, time.monotonic() - t0, run_key=run_key,
                  notes=list(notes))
