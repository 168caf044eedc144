"""docs/tpu-runs.md and docs/chip-outcomes.md from the JSON a chip check wrote on a
TPU host (``python benchmarks/chip_check.py report RUN...``, each RUN a folder of
its output, kept in docs/chip-data/; speed-validation.md is computed from their
points by benchmarks/speed_validation.py).

A later run folder wins, phase by phase, over an earlier one; the first run's
speed.json for add is shown as the one-process-per-submission run."""
from __future__ import annotations

import json
import re
import statistics
import tomllib
from pathlib import Path

from . import report_route

REPO = Path(__file__).resolve().parent.parent.parent
DOCS = REPO / "docs"
DATA = DOCS / "chip-data"
SLUGS = ("add", "dma_scale", "flash_attention", "matmul", "softmax")

# Why a bug the grader charges can be right on a one-core v5e at the visible cases.
LATENT = {
    "data-race": "a v5e has one TensorCore and runs the grid in order, so nothing raced; megacore chips (v4, "
                 "v5p) split parallel axes over two cores",
    "grid-order-dependence": "a v5e runs the grid in order on one core; the order the kernel needs held",
    "output-block-revisit": "a v5e runs the grid in order on one core, so the revisit happened to be consecutive",
    "dma-protocol": "the DMA happened to finish before its buffer was used",
    "uninitialized-memory": "the memory the kernel read without writing held values that gave the right answer "
                            "here (what it holds is not defined)",
    "vmem-overflow": "the VMEM budget is broken at the production size, not at these small cases",
    "not-a-kernel": "the work is right; it is done outside the kernel, which the assignment forbids",
    "padding-dependence": "these cases' partial blocks did not expose the padding",
    "numerics": "at these inputs the chip's error stayed within the tolerance (an overflow needs larger "
                "inputs; a bfloat16 accumulator's loss, longer sums)",
    "submission-error": "the chip runs it; an interpreter or the grader's checks refused it",
}


def _load(runs: list[Path], name: str):
    """The last run's copy of ``name`` (a run folder holds it at its top or under cc/)."""
    found = None
    for run in runs:
        for p in (run / name, run / "cc" / name):
            if p.is_file():
                found = json.loads(p.read_text())
    return found


def _speed_docs(runs: list[Path]) -> dict[str, tuple[Path, dict]]:
    """The class runs of the chip check's speed phase (``speed-SLUG/speed.json``), the last per slug."""
    out = {}
    for run in runs:
        for p in sorted(run.rglob("speed-*/speed.json")):
            doc = json.loads(p.read_text())
            out[doc["assignment"]] = (p, doc)
    return out


LOGGED = re.compile(r"^(?P<sub>[\w.-]+): (?P<status>timed|held|chip-halt|chip-hang|chip-reject|chip-divergence|"
                    r"wrong-result|not-queued|error)(?: (?P<ms>[\d.]+) ms)?(?P<rest>.*)$")


def _logged(runs: list[Path], slug: str) -> list[dict]:
    """A run stopped before it wrote speed.json: each submission's outcome from the lines `speed` printed."""
    out: list[dict] = []
    for run in runs:
        doc = run / "speed-runs.json"
        tail = json.loads(doc.read_text()).get(slug, {}).get("tail", "") if doc.is_file() else ""
        found = [m for m in (LOGGED.match(line) for line in str(tail).replace("\\n", "\n").splitlines()) if m]
        if found:
            out = [{"submission": m["sub"], "status": m["status"], "seconds": float(m["ms"]) / 1e3 if m["ms"] else None,
                    "message": m["rest"].strip(" ()"), "holds": []} for m in found]
    return out


def _ms(s) -> str:
    return f"{s * 1e3:.4f} ms" if s else ""


def _files(slug: str) -> list[str]:
    exp = REPO / "assignments" / slug / "corpus" / "expectations.toml"
    return list(tomllib.loads(exp.read_text())["files"])


def _expectations(slug: str) -> dict[str, str]:
    exp = REPO / "assignments" / slug / "corpus" / "expectations.toml"
    files = tomllib.loads(exp.read_text())["files"]
    return {Path(f).stem: v for f, v in files.items()}


def _stage_cell(r: dict) -> str:
    status = r["status"]
    if status in ("timed", "held"):
        held = f" (held: {'; '.join(h.split(':')[0] for h in r.get('holds', []))})" if r.get("holds") else ""
        return f"{status} {_ms(r.get('seconds'))}{held}"
    if status in ("chip-halt", "chip-hang", "chip-reject", "error"):
        return f"{status}: {_first_line(r.get('message', ''))}"
    return status


def _first_line(text: str) -> str:
    for key in ("BoundsCheck", "nonzero value upon exit", "did not finish", "no answer", "CompileTimeScopedVmemOom"):
        for line in text.splitlines():
            if key in line:
                return _cell(line.strip()[:200])
    return _cell(text.strip().splitlines()[0][:200] if text.strip() else "")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def tpu_runs(runs: list[Path], commands: list[str]) -> str:
    env = (_load(runs, "env.json") or {}).get("result") or {}
    docs = _speed_docs(runs[1:])        # the class runs; the first run's is the fresh-process demonstration
    named = " ".join(f"docs/chip-data/{r.name}" for r in runs)
    lines = ["# The TPU stage on a real TPU v5e", "",
             f"Generated by `python benchmarks/chip_check.py report {named}` from what these commands wrote on the "
             "lent TPU host (their scripts and logs are in docs/chip-data/; do not edit this page by hand):", ""]
    lines += [f"    {c}" for c in commands] + [""]
    device = next((d["device"] for _p, d in docs.values()), {})
    lines += [f"- Chip: {device.get('label', env.get('kind', '?'))}; JAX {device.get('jax', env.get('jax', '?'))}, "
              f"libtpu {device.get('libtpu', '?')}; Python {str(env.get('python', '?')).split()[0]}; "
              f"glibc {'.'.join(env.get('libc', ['', '?'])[1:])}.", ""]
    for run in runs:
        summary = _load([run], "summary.json") or {}
        tests = _load([run], "tests.json")
        test = ""
        if tests:
            last = tests["tail"].strip().splitlines()[-1] if tests["tail"].strip() else ""
            test = f"; tests marked `tpu`: exit {tests['returncode']} (`{last.strip()}`)"
        lines.append(f"- {run.name}: started {summary.get('started', '?')}, {summary.get('wall_s', '?')} s in all; "
                     f"by phase: {', '.join(f'{k} {v} s' for k, v in summary.get('phases', {}).items())}{test}.")
    checks = [r.name for r in runs if "speed" in ((_load([r], "summary.json") or {}).get("phases") or {})]
    if checks:
        lines.append(f"The tables below are the last run with a `speed` phase that timed each assignment "
                     f"({', '.join(sorted({str(p.parent.parent.name) for p, _d in docs.values()}))}); the "
                     f"runs with one: {', '.join(checks)}.")
    lines.append("")
    lines += _summary_table(runs, docs)
    for slug in SLUGS:
        if slug in docs:
            lines += _assignment(slug, *docs[slug])
        else:
            lines += _from_log(runs, slug)
    lines += _fresh_process(runs[0])
    for run in runs:
        lines += report_route.route(run) + report_route.fresh(run) + report_route.probe(run)
    lines += _inputs(runs)
    return "\n".join(lines) + "\n"


INPUTS_HEADING = "## What the last chip check ran"


def _inputs(runs: list[Path]) -> list[str]:
    """The hashes of the files the last run with a speed phase ran (``inputs``), read back by
    tests/test_chip_check.py, which warns when the tree has changed since."""
    recorded = {}
    for run in runs:
        summary = _load([run], "summary.json") or {}
        if summary.get("inputs") and "speed" in summary.get("phases", {}):
            recorded = summary["inputs"]
    if not recorded:
        return []
    lines = [INPUTS_HEADING, "", "The files each group hashes are in `benchmarks/chip/inputs.py`; when one of these "
             "differs from the tree, the chip check is due again (the test suite warns).", "",
             "| group | hash |", "|---|---|"]
    return lines + [f"| {g} | `{d}` |" for g, d in recorded.items()] + [""]


def recorded_inputs(text: str) -> dict[str, str]:
    """The hashes ``_inputs`` wrote into docs/tpu-runs.md."""
    part = text.split(INPUTS_HEADING, 1)[1] if INPUTS_HEADING in text else ""
    rows = (line.split("|") for line in part.splitlines() if line.startswith("| ") and "`" in line)
    return {r[1].strip(): r[2].strip().strip("`") for r in rows}


def _summary_table(runs: list[Path], docs: dict) -> list[str]:
    lines = ["| assignment | solution (baseline) | timed | held | halted | hung | refused | not queued | "
             "stage wall per submission (median) | the whole run |", "|---|---|---|---|---|---|---|---|---|---|"]
    for slug in SLUGS:
        if slug in docs:
            _p, doc = docs[slug]
            rs, sol, wall = doc["results"], _ms(doc["solution"].get("seconds")), f"{doc.get('wall_s', '?')} s"
        else:
            rs, sol, wall = _logged(runs, slug), "(not printed)", "stopped (budget)"
        count = lambda *st, rs=rs: sum(r["status"] in st for r in rs)   # noqa: E731
        walls = sorted(r["wall_s"] for r in rs if r.get("wall_s"))
        med = f"{walls[len(walls) // 2]:.1f} s" if walls else ""
        lines.append(f"| {slug} | {sol} | {count('timed')} | {count('held')} | {count('chip-halt')} | "
                     f"{count('chip-hang')} | {count('chip-reject')} | {count('not-queued')} | {med} | {wall} |")
    return lines + [""]


def _from_log(runs: list[Path], slug: str) -> list[str]:
    rows = _logged(runs, slug)
    if not rows:
        return [f"## {slug}", "", "Not timed in these runs.", ""]
    exp = _expectations(slug)
    lines = [f"## {slug}", "",
             "The run was stopped by the call's time budget during the solution's second timing, before `speed` "
             "wrote speed.json (it now writes it after every submission); each submission's outcome below is the "
             "line `speed` printed for it. The solution's first timing was not printed then (it is now).", "",
             "| submission | the grader's verdict (interpreters) | the TPU stage |", "|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['submission']} | {exp.get(r['submission'], '?')} | {_stage_cell(r)} |")
    return lines + [""]


def _fresh_process(run: Path) -> list[str]:
    docs = _speed_docs([run])
    if "add" not in docs:
        return []
    _p, doc = docs["add"]
    lines = ["## One process per submission (`--fresh-process`), add with a kernel that halts and one that hangs",
             "", f"Isolation: {doc.get('isolation', 'one process per submission')}; chip opened in "
             f"{', '.join(f'{s:.1f}' for s in doc.get('worker_open_s', []))} s; the whole run "
             f"{doc.get('wall_s', '?')} s. Solution {_ms(doc['solution'].get('seconds'))}.", "",
             "| submission | the TPU stage | stage wall time |", "|---|---|---|"]
    for r in doc["results"]:
        wall = f"{r['wall_s']:.1f} s" if r.get("wall_s") else ""
        lines.append(f"| {r['submission']} | {_stage_cell(r)} | {wall} |")
    return lines + [""]


def _assignment(slug: str, path: Path, doc: dict) -> list[str]:
    sol = doc["solution"]
    sizes = ", ".join(f"{s['size']} {_ms(s['median_s'])} ({s['calls']} calls, {s['source']} clock)"
                      for s in sol.get("sizes", []))
    drift = (doc.get("solution_drift") or {}).get("sizes", {})
    exp = _expectations(slug)
    lines = [f"## {slug}", "",
             f"Solution (the baseline): {sol['status']} {_ms(sol.get('seconds'))}: {sizes}; timed again after the "
             f"class: {', '.join(f'{k} {v:+.1%}' for k, v in drift.items()) or 'not compared'}. "
             f"Isolation: {doc.get('isolation', 'one process per submission')}; chip opened in "
             f"{', '.join(f'{s:.1f}' for s in doc.get('worker_open_s', []))} s; "
             f"the whole run {doc.get('wall_s', '?')} s"
             + (f"; workers replaced: {'; '.join(doc['workers_replaced'])}" if doc.get("workers_replaced") else "")
             + ".", "",
             "| submission | the grader's verdict (interpreters) | the TPU stage | stage wall time |",
             "|---|---|---|---|"]
    for r in doc["results"]:
        verdict = exp.get(r["submission"], "(fixture: right on every graded case)")
        wall = f"{r['wall_s']:.1f} s" if r.get("wall_s") else ""
        lines.append(f"| {r['submission']} | {verdict} | {_stage_cell(r)} | {wall} |")
    return lines + [""]


def _case_cell(c: dict) -> str:
    st = c["status"]
    if st == "right":
        return "right" + (" (to the bf16-rounded-inputs reference)" if c.get("against") else "")
    if st == "wrong":
        err = c.get("max_abs_error")
        return f"wrong ({c.get('mismatches')} of {c.get('total')} off, max error {err})"
    return f"{st}: {_cell(c.get('message', '')[:140])}"


def _what_chip_did(row: dict) -> tuple[str, str]:
    """(what the chip did, in one cell; its class: right/wrong/halt/hang/refused/not-run)."""
    out = row.get("outcome")
    res = row.get("result") or {}
    if out == "halt":
        return f"halted the core: {_first_line(row.get('message', ''))}", "halt"
    if out == "hang":
        return f"hung: {_cell(row.get('message', '')[:160])}", "hang"
    if out != "result":
        return f"{out}: {_cell(row.get('message', '')[:160])}", "error"
    if res.get("status") == "not-loaded":
        return f"not run: the file does not load ({_cell(res.get('message', '')[:120])})", "not-run"
    cases = res.get("cases", [])
    cell = "; ".join(f"{c['case']}: {_case_cell(c)}" for c in cases)
    kinds = {c["status"] for c in cases}
    kind = ("refused" if kinds & {"refused", "compile-failed"} else "wrong" if kinds & {"wrong", "wrong-output"}
            else "not-run" if kinds <= {"not-traced"} else "right")
    return cell, kind


def _agreement(grader: str, kind: str) -> str:
    if grader == "clean":
        return "agrees" if kind == "right" else "**the chip disagrees with a clean grading**"
    if kind in ("halt", "hang", "wrong", "refused"):
        return "the chip shows the bug"
    if kind == "not-run":
        return "not a kernel the chip can run"
    return "right on this chip: " + LATENT.get(grader, "latent here")


def _outcome_rows(runs: list[Path]) -> list[dict]:
    """Every file's outcome, from the last run that measured it (runs may each measure a part)."""
    by_file: dict[str, dict] = {}
    for run in runs:
        for path in (run / "outcomes.json", run / "cc" / "outcomes.json", run / "outcomes" / "outcomes.json"):
            if path.is_file():
                for row in json.loads(path.read_text()):
                    if row.get("outcome") != "skipped":
                        by_file[row["file"]] = row
    order = {f: i for i, f in enumerate(_all_files())}
    return sorted(by_file.values(), key=lambda r: order.get(r["file"], len(order)))


def _all_files() -> list[str]:
    """Every solution and corpus file, in the order the chip check takes them."""
    out = []
    for slug in SLUGS:
        corpus = REPO / "assignments" / slug / "corpus"
        out += [f"solutions/{slug}.py"] + [f"assignments/{slug}/corpus/{f}" for f in sorted(_files(slug))]
        out += [f"assignments/{slug}/corpus/{p.name}" for p in sorted(corpus.iterdir())
                if p.suffix in (".py", ".ipynb") and p.name not in _files(slug)]
    return out


def _unlisted_verdict(file: str) -> str:
    """What a corpus file its expectations do not list does on purpose (its docstring's first line)."""
    import ast
    try:
        doc = ast.get_docstring(ast.parse((REPO / file).read_text(encoding="utf-8"))) or ""
    except (OSError, SyntaxError, ValueError):
        doc = ""
    return "not listed (the test suite's): " + _cell(doc.strip().splitlines()[0] if doc.strip() else "?")


def chip_outcomes(runs: list[Path], commands: list[str]) -> str:
    rows = _outcome_rows(runs)
    env = (_load(runs, "env.json") or {}).get("result") or {}
    lines = ["# What a real TPU v5e did with every solution and corpus kernel", "",
             "Generated by `python benchmarks/chip_check.py report` from what these commands wrote on a TPU host "
             "(do not edit by hand):", ""]
    lines += [f"    {c}" for c in commands] + [""]
    python = str(env.get("python", "?")).split()[0]
    lines += [f"Chip: {env.get('kind', '?')}, JAX {env.get('jax', '?')}, Python {python}. "
              "Each file is traced as a grading traces it, written as the grader's checked program, rebuilt, "
              "compiled by Mosaic and run at every visible case of its assignment on the inputs a grading draws "
              "(run key 1), then compared with the float64 reference (float32 products at default precision, which "
              "a TPU computes from bfloat16-rounded operands, may instead match the reference of the rounded "
              "inputs within the bfloat16 tolerance, as the TPU stage allows). A halt or a hang ends that file's "
              "process; the next file gets a fresh one. The grader's verdict is the file's line in its "
              "`corpus/expectations.toml` (what grading on the interpreters charges).", ""]
    counts: dict[str, int] = {}
    for slug in SLUGS:
        lines += [f"## {slug}", "", "| file | the grader charges | what the chip did | |", "|---|---|---|---|"]
        measured = {Path(r["file"]).name for r in rows if r["slug"] == slug}
        for row in (r for r in rows if r["slug"] == slug):
            cell, kind = _what_chip_did(row)
            # What the grader charges now (the expectations may have changed since the chip ran).
            listed = Path(row["file"]).stem in _expectations(slug) or row["file"].startswith("solutions/")
            grader = _expectations(slug).get(Path(row["file"]).stem, row["grader"]) if listed else \
                _unlisted_verdict(row["file"])
            agree = _agreement(grader, kind) if listed else "not in expectations.toml: `check` does not grade it"
            counts[agree.split(":")[0]] = counts.get(agree.split(":")[0], 0) + 1
            lines.append(f"| {Path(row['file']).name} | {grader} | {cell} | {agree} |")
        for stem, grader in sorted(_expectations(slug).items()):
            name = next((f for f in _files(slug) if Path(f).stem == stem), stem)
            if name not in measured:
                lines.append(f"| {name} | {grader} | not run on a chip yet (added after the chip run) | |")
        lines.append("")
    lines += ["## In all", ""] + [f"- {k}: {v}" for k, v in sorted(counts.items())] + [""]
    lines += _notebooks(runs)
    return "\n".join(lines) + "\n"


def _notebooks(runs: list[Path]) -> list[str]:
    """A handout notebook's last cell run on the chip (``notebook-SLUG.log``): what a student sees."""
    logs = {p.stem: p for run in runs for p in sorted(run.glob("notebook-*.log"))}
    if not logs:
        return []
    lines = ["## A student's notebook on the chip", "",
             "The last cell of a handout notebook (`pallas-autograder handout SLUG`), run on the TPU host as "
             "Jupyter would run it (`notebook_last_cell.py` in its call's folder), over the add solution and over "
             "a matmul kernel the TPU compiler refuses. Its output, as printed (the host's own warnings left out):",
             ""]
    for path in logs.values():
        text = path.read_text(errors="replace").split("--- its output ---", 1)[-1]
        keep = [line for line in text.strip().splitlines() if "warn" not in line.lower()]
        lines += [f"{path.parent.name}/{path.name}:", "", *[f"    {line[:400]}" for line in keep], ""]
    return lines


def points_median(row: dict) -> float | None:
    times = (row.get("result") or {}).get("device_s") or []
    return statistics.median(times) if times else None


def main(runs: list[Path]) -> int:
    commands = []
    for run in runs:
        cmd = run / "command.txt"
        if cmd.is_file():
            commands += [f"{run.name}: {line}" for line in cmd.read_text().strip().splitlines()]
    (DOCS / "tpu-runs.md").write_text(tpu_runs(runs, commands))
    (DOCS / "chip-outcomes.md").write_text(chip_outcomes(runs, commands))
    print(f"wrote {DOCS / 'tpu-runs.md'} and {DOCS / 'chip-outcomes.md'}")
    return 0
