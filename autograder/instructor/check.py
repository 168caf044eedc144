"""The `check` verb: an assignment's own test, one row per claim.

Quick rows (what `build` also runs, no JAX): the spec and what it names
resolve, the reference answers the first case with the output's shape, the
mistakes declared beside it load and differ from it, the solution defines the
entry function and a starter can be made from it.
Full rows grade for real (the same code path as Gradescope): the solution is
clean on every rung and probe; every case exposes what a tiling bug needs
(on the solution's own grid: at least 2 blocks on each grid axis, at least 3
on a reduction axis); every corpus file gets the finding its expectations file
declares; the grading fits the spec's budget in Gradescope's default container
(measured there with cgroups when this machine allows, as root; else the
measured time times CONTAINER_FACTOR, see below); the solution and every clean
corpus kernel keep full marks on every one of many run keys (``--run-keys``,
``grading.sweep``): a correct kernel must not lose a point by the luck of the draw.
"""
from __future__ import annotations

import ast
import json
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..children import CHECK_SUITE
from ..findings import CATALOGUE
from ..grading import assignments, grade, probes, sweep
from ..grading.report import Report
from ..grading.run import inputs
from ..grading.run.draws import load_reference
from ..isolation import container
from ..isolation.confinement import python_command
from ..pallas_surface.static.facts import CallMap, IndexMaps
from ..spec import Assignment, ProbeRubric, mistakes
from . import starter

# Gradescope's default container (0.5 CPU, 768 MB) against this machine's full
# speed: `python benchmarks/grade_bench.py solutions/matmul.py matmul --container`
# took 64.8 s where the same grading took 21.6 s unconstrained (3.0x).
CONTAINER_FACTOR = 3.0
EXPECTATIONS = "expectations.toml"
RUN_KEYS = 100          # run keys each correct kernel is graded on (`check --run-keys`)


@dataclass(frozen=True)
class Row:
    claim: str
    ok: bool
    detail: str
    seconds: float = 0.0


def corpus_folder(a: Assignment) -> Path | None:
    """The assignment's own ``corpus/`` (every assignment, bundled or not, keeps its
    corpus there), or None when it has no expectations file."""
    folder = a.folder / "corpus"
    return folder if (folder / EXPECTATIONS).is_file() else None


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


def _mistakes_rows(a: Assignment) -> list[Row]:
    """The mistakes declared beside the reference (``spec.mistakes``) load, and each one
    that does not take the kernel's blocks computes something else than the reference on
    the first case (one that does not would name every wrong kernel). None declared: no row."""
    try:
        found = mistakes.of(a)
    except Exception as e:  # noqa: BLE001 - the instructor's declaration: say how it fails
        return [Row("declared mistakes load", False, f"{type(e).__name__}: {e}")]
    if not found:
        return []
    case = a.cases[0]
    args = [x.array.astype(np.float64) if x.kind == "array" else x.value for x in inputs.make(a, case)]
    said, bad = [], []
    for m in found:
        if m.tiled:
            said.append(f"{m.name} (takes the kernel's blocks: tried when a kernel is graded)")
            continue
        try:
            same = np.allclose(np.asarray(m(args, {}), dtype=np.float64), load_reference(a)(*args))
        except Exception as e:  # noqa: BLE001 - the instructor's mistake raised: say how
            bad.append(f"{m.name} raised {type(e).__name__}: {e}")
            continue
        (bad if same else said).append(f"{m.name} ({'is the reference' if same else 'differs'} on {case.name!r})")
    return [Row("declared mistakes load and differ from the reference", not bad, "; ".join(bad + said))]


def _solution_rows(a: Assignment) -> list[Row]:
    path = a.solution
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


def _checks_row(a: Assignment) -> list[Row]:
    """The custom checks import and list their tests (in a process of their own)."""
    if a.checks is None:
        return []
    proc = subprocess.run(python_command(CHECK_SUITE, str(a.folder), a.checks.file),
                          capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return [Row("custom checks load", False, f"{a.checks.file}: {last}")]
    tests = json.loads(proc.stdout)
    points = sum(t["weight"] or 0 for t in tests)
    said = f"{len(tests)} test{'' if len(tests) == 1 else 's'}, {points:g} point{'' if points == 1 else 's'}"
    return [Row("custom checks load", bool(tests),
                f"{a.checks.file}: {said}" if tests else f"{a.checks.file} holds no unittest test")]


def quick(a: Assignment) -> list[Row]:
    """What build runs before writing a zip: no grading."""
    return [Row("spec is valid", True, f"{len(a.cases)} cases, rungs {', '.join(a.rungs)}"),
            _reference_row(a), *_mistakes_rows(a), *_solution_rows(a), *_checks_row(a)]


def _graded(a: Assignment, path: Path) -> Report:
    return grade.grade(a, path, grade.GradeOptions(run_key=1))


def _clean_row(a: Assignment) -> tuple[Row, float, Report]:
    t0 = time.monotonic()
    report = _graded(a, a.solution)
    seconds = time.monotonic() - t0
    found = sorted({t.finding.id for t in report.tests if t.finding is not None})
    ok = report.score == report.max_score and not found
    return Row("solution clean on every rung and probe", ok,
               f"{report.score:g}/{report.max_score:g}" + (f"; findings {found}" if found else "")
               + _estimate_note(report), seconds), seconds, report


REFUSED = "the TPU compiler would refuse it"    # speed.model.vmem_refusal's words


def _fits_row(a: Assignment, report: Report) -> Row:
    """The solution compiles at every [speed] size: a real v5e refused dma_scale's solution at the
    speed size its spec once had (a 64 MiB output block against 16 MiB of scoped VMEM), which
    left the assignment untimeable. (The [production] size's VMEM is the vmem-overflow probe's.)"""
    sizes = report.speed.sizes if report.speed else ()
    bad = [s for s in sizes if s.estimate is None and REFUSED in (s.problem or "")]
    detail = "; ".join(f"{a.folder / 'spec.toml'}: [[speed.sizes]] {s.size!r}: {s.problem}" for s in bad)
    return Row("solution fits the TPU compiler at every [speed] size", not bad,
               detail + (" (lower the size, or change the solution's blocks)" if bad else
                         f"{len(sizes)} size(s) within the chip's scoped VMEM"))


def _estimate_note(report: Report) -> str:
    """The speed estimate of a graded kernel, per [speed] size (the estimate runs on every kernel)."""
    if report.speed is None:
        return ""
    parts = [f"{s.estimate.seconds * 1e3:.3g} ms {s.estimate.bound}" if s.estimate
             else f"no estimate ({s.problem[:80]})" for s in report.speed.sizes]
    return f"; estimate on {report.speed.chip}: " + ", ".join(parts)


def _exposure_row(a: Assignment) -> Row:
    """The index-map scan on every case, of the solution: its grid per case."""
    scan = next((p for p in a.probes if p.name == "index-maps"), ProbeRubric(probes.INDEX_MAPS.terms, 1.0))
    every = replace(a, probes=(scan,), probe_cases=tuple(c.name for c in a.cases))
    report = _graded(every, a.solution)
    short, partial = [], []
    for run, outcome in report.outcomes.items():
        if run.analysis != "index-maps" or not outcome.ok:
            continue
        calls = outcome.facts.calls if isinstance(outcome.facts, IndexMaps) else ()
        for call in calls:
            reduction = {a for op in call.operands for a in op.reduction_axes}
            for axis, n in enumerate(call.grid):
                need = 3 if axis in reduction else 2
                if n < need:
                    short.append(f"{run.case.name}: grid axis {axis} has {n} block(s), needs >= {need}")
        short += _repeated_blocks(a, run.case, calls)
        if run.case.partial_edge_block:
            partial.append(run.case.name)
            if not any(op.partial_count for call in calls for op in call.operands):
                short.append(f"{run.case.name}: the spec claims a partial edge block, but the solution's "
                             "blocks divide every array")
    detail = ("every grid axis has >= 2 blocks (>= 3 on a reduction axis) on every case; no input "
              "repeats a block")
    if partial:
        detail += f"; a partial edge block where claimed ({len(partial)} case{'s' if len(partial) > 1 else ''})"
    return Row("every case exposes tiling bugs", not short,
               "; ".join(short[:4]) if short else detail + ", for the solution's tiling")


def _repeated_blocks(a: Assignment, case, calls: tuple[CallMap, ...]) -> list[str]:
    """Non-periodic data: no two of an input's blocks (the solution's tiling) are
    equal, or a kernel that reads the wrong block could still pass."""
    ops = [op for call in calls for op in call.operands if not op.is_output]
    found = []
    for value in inputs.make(a, case):
        if value.kind != "array":
            continue
        arr = np.asarray(value.array)
        op = next((o for o in ops if o.array_shape == arr.shape), None)
        if op is None or len(op.block_shape) != arr.ndim:
            continue
        block = [max(int(b), 1) for b in op.block_shape]
        counts = [s // b for s, b in zip(arr.shape, block)]
        if int(np.prod(counts)) < 2 or int(np.prod(counts)) > 4096:
            continue
        seen = set()
        for at in np.ndindex(*counts):
            piece = arr[tuple(slice(i * b, (i + 1) * b) for i, b in zip(at, block))].tobytes()
            if piece in seen:
                found.append(f"{case.name}: input {value.name} repeats a {tuple(block)} block (periodic data "
                             "lets a kernel that reads the wrong block pass)")
                break
            seen.add(piece)
    return found


def _corpus_rows(a: Assignment) -> list[Row]:
    folder = corpus_folder(a)
    if folder is None:
        return [Row("corpus", False, f"no {EXPECTATIONS} in {a.folder / 'corpus'}")]
    expected = tomllib.loads((folder / EXPECTATIONS).read_text(encoding="utf-8")).get("files", {})
    rows = []
    for name, want in sorted(expected.items()):
        if want != "clean" and want not in CATALOGUE:
            rows.append(Row(f"corpus {name}", False, f"expected {want!r}: must be 'clean' or a finding ID of "
                            f"the catalogue ({', '.join(CATALOGUE)}); in {folder / EXPECTATIONS}"))
            continue
        t0 = time.monotonic()
        report = _graded(a, folder / name)
        ids = sorted({t.finding.id for t in report.tests if t.finding is not None})
        ok = (not ids and report.score == report.max_score) if want == "clean" else want in ids
        rows.append(Row(f"corpus {name}", ok, f"expected {want}; got {', '.join(ids) or 'clean'} "
                        f"({report.score:g}/{report.max_score:g})" + _estimate_note(report),
                        time.monotonic() - t0))
    return rows


def _clean_corpus(a: Assignment) -> list[Path]:
    folder = corpus_folder(a)
    if folder is None:
        return []
    expected = tomllib.loads((folder / EXPECTATIONS).read_text(encoding="utf-8")).get("files", {})
    return [folder / name for name, want in sorted(expected.items()) if want == "clean"]


def _sweep_rows(a: Assignment, n: int, say) -> list[Row]:
    """The solution and each clean corpus kernel graded on run keys 1..n: a
    correct kernel that loses a point on some draw is a spec to fix (a
    tolerance, a stress input), not a student's problem."""
    keys = list(range(1, n + 1))
    rows = []
    for path in [a.solution, *_clean_corpus(a)]:
        who = "solution" if path == a.solution else f"corpus {path.name}"
        say(f"grading the {who} on {n} run keys ...")
        s = sweep.sweep(a, path, keys)
        losing = s.losing
        ok = not s.problem and len(s.results) == n and not losing
        if s.problem:
            detail = f"could not grade: {s.problem}"
        elif losing:
            lost = sorted({f"{number} {fid}" for r in losing for number, fid, _m in r.lost})
            detail = (f"loses points on {len(losing)} of {n} run keys (e.g. --run-key "
                      f"{', '.join(str(r.run_key) for r in losing[:5])}): {'; '.join(lost[:4])}")
        else:
            detail = f"full marks on every one of {n} run keys ({s.runs} runs)"
        rows.append(Row(f"{who} full marks on {n} run keys", ok, detail, s.seconds))
    return rows


def _container_row(a: Assignment) -> Row:
    """The solution graded by the real CLI inside the emulated container: its
    wall time against the spec's budget, and full marks under the memory cap."""
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results.json"
        cmd = python_command("autograder", "grade", str(a.solution), "-a", a.slug, "--assignments",
                             str(a.folder.parent), "--run-key", "1", "--results", str(results))
        with container.Container() as box:
            t0 = time.monotonic()
            proc = subprocess.run(cmd, preexec_fn=box.enter, capture_output=True, text=True,
                                  timeout=a.limits.gradescope_timeout_s + 60)
            wall, peak, ooms = time.monotonic() - t0, box.peak_mb, box.oom_kills
        doc = json.loads(results.read_text()) if results.is_file() else {}
    full = proc.returncode == 0 and doc.get("score") == sum(t.get("max_score", 0) for t in doc.get("tests", []))
    ok = full and wall <= a.limits.total_s and not ooms
    detail = (f"measured: {wall:.0f} s at 0.5 CPU, peak {peak:.0f} of {container.MEMORY_MB} MB; budget "
              f"{a.limits.total_s:g} s" + ("" if full else f"; the grading there did not give full marks "
                                           f"(exit {proc.returncode}, OOM kills {ooms})"))
    return Row("fits Gradescope's default container", ok, detail, wall)


def rows(a: Assignment, quick_only: bool = False, progress: bool = False,
        estimate_only: bool = False, run_keys: int = RUN_KEYS) -> list[Row]:
    rows = quick(a)
    if quick_only or not all(r.ok for r in rows):
        return rows
    say = (lambda m: print(m, file=sys.stderr, flush=True)) if progress else (lambda m: None)
    say("grading the solution ...")
    clean, seconds, report = _clean_row(a)
    rows += [clean, _fits_row(a, report)]
    if container.available() is None and not estimate_only:
        say("grading the solution again in Gradescope's default container (0.5 CPU, 768 MB) ...")
        rows.append(_container_row(a))
    else:
        est = seconds * CONTAINER_FACTOR
        why = "--estimate-container" if estimate_only else container.available()
        rows.append(Row("fits Gradescope's default container", est <= a.limits.total_s,
                        f"{seconds:.0f} s here x {CONTAINER_FACTOR:g} = about {est:.0f} s at 0.5 CPU, "
                        f"estimated (not measured: {why}); budget {a.limits.total_s:g} s"))
    say("scanning every case's grid ...")
    rows.append(_exposure_row(a))
    say("grading the corpus ...")
    rows += _corpus_rows(a)
    if run_keys > 0:
        rows += _sweep_rows(a, run_keys, say)
    return rows


def table(rows: list[Row]) -> str:
    width = max(len(r.claim) for r in rows)
    lines = [f"{'claim':<{width}}  ok    detail", f"{'-' * width}  ----  ------"]
    for r in rows:
        when = f" [{r.seconds:.0f} s]" if r.seconds else ""
        lines.append(f"{r.claim:<{width}}  {'yes' if r.ok else 'NO':<4}  {r.detail}{when}")
    lines.append(f"{sum(r.ok for r in rows)} of {len(rows)} hold")
    return "\n".join(lines)


def add_arguments(p) -> None:
    p.add_argument("slug")
    p.add_argument("--quick", action="store_true", help="only what build checks: the spec and what it names")
    p.add_argument("--estimate-container", action="store_true",
                   help="estimate the time at 0.5 CPU from this machine's (x3.0) instead of measuring "
                        "it under cgroups (measured by default where this machine allows, as root)")
    p.add_argument("--run-keys", type=int, default=RUN_KEYS, metavar="N",
                   help=f"grade the solution and every clean corpus kernel on run keys 1..N (default "
                        f"{RUN_KEYS}; 0 skips it): none may lose a point on any draw")


def run(args) -> int:
    assignment = assignments.find(args.slug, args.assignments)
    found = rows(assignment, quick_only=args.quick, progress=sys.stderr.isatty(),
                 estimate_only=args.estimate_container, run_keys=args.run_keys)
    print(table(found))
    return 0 if all(r.ok for r in found) else 1
