"""The `check` verb: an assignment's own test, one row per claim.

Quick rows (what `build` also runs, no JAX): the spec and what it names
resolve, the reference answers the first case with the output's shape, the
solution defines the entry function and a starter can be made from it.
Full rows grade for real (the same code path as Gradescope): the solution is
clean on every rung and probe; every case exposes what a tiling bug needs
(on the solution's own grid: at least 2 blocks on each grid axis, at least 3
on a reduction axis); every corpus file gets the finding its expectations file
declares; the grading fits the spec's budget in Gradescope's default container
(the measured time times CONTAINER_FACTOR, see below).
"""
from __future__ import annotations

import ast
import sys
import time
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from . import grade, inputs, starter
from .calibrate import solution_path
from .draws import load_reference
from .spec import Assignment, ProbeRubric

# Gradescope's default container (0.5 CPU, 768 MB) against this machine's full
# speed: `python benchmarks/grade_bench.py solutions/matmul.py matmul --container`
# took 64.8 s where the same grading took 21.6 s unconstrained (3.0x).
CONTAINER_FACTOR = 3.0
EXPECTATIONS = "expectations.toml"
REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Row:
    claim: str
    ok: bool
    detail: str
    seconds: float = 0.0


def corpus_folder(a: Assignment) -> Path | None:
    """The assignment's own corpus/, else the repository's tests/corpus/<slug>/."""
    for folder in (a.folder / "corpus", REPO / "tests" / "corpus" / a.slug):
        if (folder / EXPECTATIONS).is_file():
            return folder
    return None


def _reference_row(a: Assignment) -> Row:
    try:
        fn = load_reference(a)
    except Exception as e:  # noqa: BLE001 - the instructor's reference failed to import: say how
        return Row("reference resolves", False, f"{a.reference}: {type(e).__name__}: {e}")
    case = a.cases[0]
    args = [x.array.astype(np.float64) if x.kind == "array" else x.value for x in inputs.make(a, case)]
    try:
        out = np.asarray(fn(*args))
    except Exception as e:  # noqa: BLE001 - the instructor's reference failed: say how
        return Row("reference resolves", False, f"{a.reference} raised {type(e).__name__}: {e}")
    want = a.output_shape(case)
    ok = tuple(out.shape) == tuple(want)
    return Row("reference resolves", ok, f"{a.reference} gives {tuple(out.shape)} on case {case.name!r}"
               + ("" if ok else f"; the spec's output is {tuple(want)}"))


def _solution_rows(a: Assignment) -> list[Row]:
    path = solution_path(a)
    if not path.is_file():
        return [Row("solution defines the entry function", False, f"no solution at {path}")]
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except SyntaxError as e:
        return [Row("solution defines the entry function", False, f"{path.name}: line {e.lineno}: {e.msg}")]
    names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    rows = [Row("solution defines the entry function", a.entry_function in names,
                f"{path.name} defines {a.entry_function}" if a.entry_function in names else
                f"{path.name} defines {sorted(names)}, not {a.entry_function}")]
    try:
        text = starter.starter_for(path)
        has = f"def {a.entry_function}(" in text
        rows.append(Row("starter made from the solution", has,
                        f"{len(text.splitlines())} lines" if has else "the starter lost the entry function"))
    except starter.StarterError as e:
        rows.append(Row("starter made from the solution", False, str(e)))
    return rows


def quick(a: Assignment) -> list[Row]:
    """What build runs before writing a zip: no grading."""
    return [Row("spec is valid", True, f"{len(a.cases)} cases, rungs {', '.join(a.rungs)}"),
            _reference_row(a), *_solution_rows(a)]


def _graded(a: Assignment, path: Path) -> grade.Report:
    return grade.grade(a, path, grade.GradeOptions(run_key=1))


def _clean_row(a: Assignment) -> tuple[Row, float]:
    t0 = time.monotonic()
    report = _graded(a, solution_path(a))
    seconds = time.monotonic() - t0
    found = sorted({t.finding.id for t in report.tests if t.finding is not None})
    ok = report.score == report.max_score and not found
    return Row("solution clean on every rung and probe", ok,
               f"{report.score:g}/{report.max_score:g}" + (f"; findings {found}" if found else ""),
               seconds), seconds


def _exposure_row(a: Assignment) -> Row:
    """The index-map scan on every case, of the solution: its grid per case."""
    scan = next((p for p in a.probes if p.name == "index-maps"), ProbeRubric("index-maps", 1.0))
    every = replace(a, probes=(scan,), probe_cases=tuple(c.name for c in a.cases))
    report = _graded(every, solution_path(a))
    short = []
    for run, outcome in report.outcomes.items():
        if run.analysis != "index-maps" or not outcome.ok:
            continue
        for call in (outcome.facts or {}).get("calls", []):
            reduction = {a for op in call.get("operands", []) for a in op.get("reduction_axes", [])}
            for axis, n in enumerate(call["grid"]):
                need = 3 if axis in reduction else 2
                if n < need:
                    short.append(f"{run.case.name}: grid axis {axis} has {n} block(s), needs >= {need}")
    return Row("every case exposes tiling bugs", not short,
               "; ".join(short[:4]) if short else "every grid axis has >= 2 blocks (>= 3 on a reduction "
               "axis) on every case, for the solution's tiling")


def _corpus_rows(a: Assignment) -> list[Row]:
    folder = corpus_folder(a)
    if folder is None:
        return [Row("corpus", False, f"no {EXPECTATIONS} in {a.folder / 'corpus'}")]
    expected = tomllib.loads((folder / EXPECTATIONS).read_text(encoding="utf-8")).get("files", {})
    rows = []
    for name, want in sorted(expected.items()):
        t0 = time.monotonic()
        report = _graded(a, folder / name)
        ids = sorted({t.finding.id for t in report.tests if t.finding is not None})
        ok = (not ids and report.score == report.max_score) if want == "clean" else want in ids
        rows.append(Row(f"corpus {name}", ok, f"expected {want}; got {', '.join(ids) or 'clean'} "
                        f"({report.score:g}/{report.max_score:g})", time.monotonic() - t0))
    return rows


def run(a: Assignment, quick_only: bool = False, progress: bool = False) -> list[Row]:
    rows = quick(a)
    if quick_only or not all(r.ok for r in rows):
        return rows
    say = (lambda m: print(m, file=sys.stderr, flush=True)) if progress else (lambda m: None)
    say("grading the solution ...")
    clean, seconds = _clean_row(a)
    rows.append(clean)
    est = seconds * CONTAINER_FACTOR
    rows.append(Row("fits Gradescope's default container", est <= a.limits.total_s,
                    f"{seconds:.0f} s here x {CONTAINER_FACTOR:g} = about {est:.0f} s at 0.5 CPU; budget "
                    f"{a.limits.total_s:g} s"))
    say("scanning every case's grid ...")
    rows.append(_exposure_row(a))
    say("grading the corpus ...")
    rows += _corpus_rows(a)
    return rows


def table(rows: list[Row]) -> str:
    width = max(len(r.claim) for r in rows)
    lines = [f"{'claim':<{width}}  ok    detail", f"{'-' * width}  ----  ------"]
    for r in rows:
        when = f" [{r.seconds:.0f} s]" if r.seconds else ""
        lines.append(f"{r.claim:<{width}}  {'yes' if r.ok else 'NO':<4}  {r.detail}{when}")
    lines.append(f"{sum(r.ok for r in rows)} of {len(rows)} hold")
    return "\n".join(lines)
