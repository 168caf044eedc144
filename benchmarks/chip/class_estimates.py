"""The estimate each kernel's grading showed, against what the TPU stage measured for it on
the chip (the class runs of the chip check: every kernel `speed` timed, the solution too).

    .venv-jax-0.10.2/bin/python benchmarks/chip/class_estimates.py extract .chip RUN
        writes RUN/estimates.json: each submission's estimate, from the review sites
        `chip_check.py prepare` graded on a CPU machine (what a student was shown);
    .venv-jax-0.10.2/bin/python benchmarks/chip/class_estimates.py now RUN
        writes RUN/estimates-now.json: each timed kernel's estimate from today's model
        (`pallas-autograder estimate` at the speed size);
    python benchmarks/chip/class_estimates.py table RUN
        prints the markdown table docs/speed-validation.md holds (speed_validation.py calls it).

Kernels added to the corpora after the model's last fit (``NEW``) had never been timed on a
chip; ``SEEN`` are the ones whose call-F numbers changed the model since (a
jax.debug.print's cost, fitted to debug_prints; no estimate for a call inside a loop)."""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
SLUGS = ("add", "dma_scale", "flash_attention", "matmul", "softmax")
SEEN = {"glue_outside_kernels", "kernel_per_row_block"}
# Added to the corpora after the model's last fit (chip calls A-C), first timed on a chip in call F.
NEW = {"add": {"glue_outside_kernels", "kernel_per_row_block", "unrolled_column_loop", "parallel_after_arbitrary"},
       "matmul": {"astype_outside", "blocks_chosen_by_shape", "precision_highest_f32_only"},
       "softmax": {"parallel_halves_share_last_block", "specialised_on_n"}}


def extract(prepared: Path, run: Path) -> int:
    sys.path[:0] = [str(REPO)]
    from autograder.grading import assignments
    from autograder.review import command as review
    out: dict[str, dict] = {}
    for slug in SLUGS:
        a = assignments.find(slug, REPO / "assignments")
        site = prepared / "sites" / slug
        graded = review.stored(a, prepared / "exports" / slug, site) + [("solution", review.stored_solution(a, site))]
        for sub, g in graded:
            name = sub if isinstance(sub, str) else sub.id
            est = ((g.results or {}).get("extra_data") or {}).get("speed_estimate") if g else None
            if est:
                out.setdefault(slug, {})[name] = {size: {k: s.get(k) for k in ("status", "seconds", "bound", "why")}
                                                  for size, s in (est.get("sizes") or {}).items()}
    (run / "estimates.json").write_text(json.dumps(out, indent=1, sort_keys=True))
    print(f"wrote {run / 'estimates.json'}")
    return 0


def _file(slug: str, name: str) -> Path:
    if name == "solution":
        return REPO / "solutions" / f"{slug}.py"
    folder = REPO / "assignments" / slug / "corpus"
    return next(p for p in (folder / f"{name}.py", folder / f"{name}.ipynb") if p.is_file())


def now(run: Path) -> int:
    """Today's model's estimate of every kernel the run timed, at its size (a CPU trace each)."""
    import subprocess
    out: dict[str, dict] = {}
    sys.path[:0] = [str(REPO)]
    from autograder.grading import assignments
    for slug in SLUGS:
        doc = run / f"speed-{slug}" / "speed.json"
        if not doc.is_file():
            continue
        data = json.loads(doc.read_text())
        sizes = {z.name: z for z in assignments.find(slug, REPO / "assignments").speed.sizes}
        for r in [{"submission": "solution", **data["solution"]}] + data["results"]:
            for s in r.get("sizes") or () if r.get("status") in ("timed", "held") else ():
                z = sizes[s["size"]]
                cmd = [sys.executable, "-m", "autograder", "estimate", str(_file(slug, r["submission"])), "-a", slug,
                       "--size", ",".join(f"{k}={v}" for k, v in dict(z.dims).items()), "--dtype", z.dtype, "--json"]
                proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
                try:
                    e = json.loads(proc.stdout)
                except ValueError:
                    e = {"status": "no-estimate", "why": (proc.stderr.strip().splitlines() or ["?"])[-1]}
                out.setdefault(slug, {}).setdefault(r["submission"], {})[s["size"]] = {
                    k: e.get(k) for k in ("status", "seconds", "bound", "why")}
                print(slug, r["submission"], e.get("status"), e.get("seconds"), e.get("why", ""))
    (run / "estimates-now.json").write_text(json.dumps(out, indent=1, sort_keys=True))
    return 0


def _timed(run: Path):
    """(assignment, kernel, size row) for every kernel a run's `speed` timed at a size, the solution first."""
    for slug in SLUGS:
        doc_path = run / f"speed-{slug}" / "speed.json"
        if not doc_path.is_file():
            continue
        doc = json.loads(doc_path.read_text())
        for r in [{"submission": "solution", **doc["solution"]}] + doc["results"]:
            if r.get("status") in ("timed", "held"):
                for s in r.get("sizes") or ():
                    yield slug, r["submission"], s


def rows(run: Path) -> list[dict]:
    shown = json.loads((run / "estimates.json").read_text())
    today = run / "estimates-now.json"
    est = json.loads(today.read_text()) if today.is_file() else shown
    out = []
    for slug, kernel, s in _timed(run):
        e = (est.get(slug, {}).get(kernel) or {}).get(s["size"]) or {}
        chip = s["median_s"]
        was = (shown.get(slug, {}).get(kernel) or {}).get(s["size"]) or {}
        row = {"slug": slug, "kernel": kernel, "size": s["size"], "chip_s": chip,
               "estimate_s": e.get("seconds") if e.get("status") == "estimated" else None,
               "shown_s": was.get("seconds") if was.get("status") == "estimated" else None,
               "why": e.get("why") or e.get("status") or "no estimate in its grading",
               "blind": kernel in NEW.get(slug, set()) - SEEN,
               "new": kernel in NEW.get(slug, set())}
        if row["estimate_s"]:
            row["error"] = row["estimate_s"] / chip - 1
        out.append(row)
    return out


def table(run: Path) -> str:
    rs = rows(run)
    lines = ["| assignment | kernel | size | chip (device time) | estimate shown in its grading | estimate now | "
             "error now | |", "|---|---|---|---|---|---|---|---|"]
    for r in rs:
        est = f"{r['estimate_s'] * 1e3:.4f} ms" if r.get("estimate_s") else f"none ({r['why']})"
        shown = f"{r['shown_s'] * 1e3:.4f} ms" if r.get("shown_s") else "none"
        err = f"{r['error']:+.1%}" if "error" in r else ""
        tag = "blind (new)" if r["blind"] else "new, changed the model" if r["new"] else ""
        lines.append(f"| {r['slug']} | {r['kernel']} | {r['size']} | {r['chip_s'] * 1e3:.4f} ms | {shown} | {est} | "
                     f"{err} | {tag} |")
    summary = []
    for label, part in (("every kernel timed", rs), ("the blind (new) kernels", [r for r in rs if r["blind"]])):
        errs = [abs(r["error"]) for r in part if "error" in r]
        if errs:
            summary.append(f"- {label}: {len(errs)} with an estimate, median |error| {statistics.median(errs):.1%}, "
                           f"worst {max(errs):.1%}; {sum('error' not in r for r in part)} without one.")
    return "\n".join(lines + [""] + summary) + "\n"


def repeat(first: Path, again: Path) -> str:
    """How far a later chip check's device times are from an earlier one's, kernel by kernel
    (the chip's own repeatability: the estimate cannot be closer than this)."""
    a, b = ({(slug, kernel, s["size"]): s["median_s"] for slug, kernel, s in _timed(run)} for run in (first, again))
    both = sorted(set(a) & set(b))
    if not both:
        return ""
    diffs = [abs(b[k] / a[k] - 1) for k in both]
    worst = both[max(range(len(both)), key=diffs.__getitem__)]

    def call(run: Path) -> str:
        return run.name.replace("call", "call ")
    return (f"- the same kernels timed again in chip {call(again)} ({len(both)} of them, the same sizes): "
            f"device times median {statistics.median(diffs):.2%} from {call(first)}'s, at most "
            f"{max(diffs):.1%} ({worst[0]} {worst[1]}).\n")


def main(argv: list[str]) -> int:
    if argv[:1] == ["extract"]:
        return extract(Path(argv[1]), Path(argv[2]))
    if argv[:1] == ["now"]:
        return now(Path(argv[1]))
    if argv[:1] == ["table"]:
        print(table(Path(argv[1])))
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
