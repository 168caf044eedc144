"""docs/tpu-runs.md's sections on a chip call that ran the README's TPU route, `speed
--fresh-process` and the open probe (chip call K: docs/chip-data/callK/command.sh):
what the host installed, where the baseline came from, what each submission paid
before its first timed call, and what a worker's start costs phase by phase."""
from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

FIRST_CALL = re.compile(r"^\[\d+/\d+\] (?P<sub>[^:]+): call \(size [^,]+, warmup 0\) (?P<s>\d+) s$")


def _ms(s) -> str:
    return f"{s * 1e3:.4f} ms" if s else ""


def _doc(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


def first_calls(log: Path) -> dict[str, int]:
    """Seconds from each submission's start to its first timed call (the progress lines `speed` prints)."""
    out: dict[str, int] = {}
    if log.is_file():
        for line in log.read_text(errors="replace").splitlines():
            m = FIRST_CALL.match(line.strip())
            if m and m["sub"] not in out:
                out[m["sub"]] = int(m["s"])
    return out


def _results(doc: dict, firsts: dict[str, int]) -> list[str]:
    rows = ["| submission | the TPU stage | stage wall time | to its first timed call |", "|---|---|---|---|"]
    for r in [{"submission": "solution", **doc["solution"]}] + doc["results"]:
        status = f"{r['status']} {_ms(r.get('seconds'))}".strip()
        wall = f"{r['wall_s']:.1f} s" if r.get("wall_s") else ""
        first = f"{firsts[r['submission']]} s" if r["submission"] in firsts else ""
        rows.append(f"| {r['submission']} | {status} | {wall} | {first} |")
    return rows


def route(run: Path) -> list[str]:
    doc = _doc(run / "route-speed-out" / "speed.json")
    if doc is None:
        return []
    install = (run / "route-install.log").read_text(errors="replace") if (run / "route-install.log").is_file() else ""
    keep = [ln for ln in install.splitlines() if ln.startswith(("host:", "the folder:", "Successfully installed",
                                                                  "install rc", "autograder from"))]
    said = next((ln for ln in (run / "route-speed.log").read_text(errors="replace").splitlines()
                 if "the instructor solution is" in ln), "") if (run / "route-speed.log").is_file() else ""
    lines = [f"## The TPU guide's route on the v5e ({run.name})", "",
             "A folder holding only what docs/guides/tpu.md (\"On a TPU host\") names (`review-site/`, "
             "`export.zip`, `wheels/`, `assignments/`, made by `benchmarks/chip/route.py` on the CPU machine "
             "under jax 0.10.2), the guide's install and `speed` commands as written (the slug add):", ""]
    lines += [f"    {ln.strip()}" for ln in keep + ([said] if said else [])] + [""]
    lines += [f"Isolation: {doc.get('isolation')}; chip opened in "
              f"{', '.join(f'{s:.1f}' for s in doc.get('worker_open_s', []))} s; the whole run "
              f"{doc.get('wall_s', '?')} s.", ""]
    return lines + _results(doc, first_calls(run / "route-speed.log")) + [""]


def fresh(run: Path) -> list[str]:
    doc = _doc(run / "fresh-speed-out" / "speed.json")
    if doc is None:
        return []
    firsts = first_calls(run / "fresh-speed.log")
    default = _doc(run / "route-speed-out" / "speed.json")
    opens = doc.get("worker_open_s", [])
    lines = [f"## One process per submission (`--fresh-process`), the next one prestarted ({run.name})", "",
             "The same class and site as the route above. Each submission's worker was started while the last "
             "one still held the chip (JAX and the stage imported; the chip opened once the last one ended); "
             "the run's float64 references were left on disk for the next process.", "",
             f"Chip opened in {', '.join(f'{s:.1f}' for s in opens)} s (the first cold, the rest prestarted); "
             f"the whole run {doc.get('wall_s', '?')} s"
             + (f", against {default.get('wall_s')} s in one worker (the route's run)" if default else "") + ".",
             ""]
    if firsts:
        later = [v for k, v in firsts.items() if k != "solution"]
        if later:
            lines += [f"To the first timed call: median {statistics.median(later)} s a submission "
                      f"({min(later)}-{max(later)} s) after the solution's {firsts.get('solution', '?')} s.", ""]
    return lines + _results(doc, firsts) + [""]


PHASES = (("python_start", "Python up"), ("import_jax", "import jax"), ("import_stage", "the stage's modules"),
          ("go", "waiting (prestarted)"), ("open", "open the chip"), ("refused", "refused"),
          ("input", "first input"), ("compile", "compile a kernel"), ("first_call", "first call"),
          ("profiled_call", "a profiled call"), ("exit", "end of the process"))


def probe(run: Path) -> list[str]:
    d = _doc(run / "open-probe.json")
    if d is None:
        return []
    runs = [("cold 1", (d.get("cold") or [{}])[0].get("phases", {}))]
    runs += [("cold 2", d["cold"][1]["phases"])] if len(d.get("cold", [])) > 1 else []
    held = d.get("held") or {}
    runs += [(name, held[key]) for name, key in (("holder", "holder"), ("second opener", "second_opener"),
                                                 ("prestarted", "prestarted")) if key in held]
    runs += [(f"cache {i + 1}", c) for i, c in enumerate(d.get("cache") or [])]
    lines = [f"## What a chip worker's start costs ({run.name}: `benchmarks/chip/open_probe.py`)", "",
             "Seconds of each phase of a probe process, on its own clock. Cold: started after the last ended. "
             "Held: while the holder had the chip, a second process tried to open it, and a prestarted one "
             "(imports done) waited and opened once the holder ended. Cache: JAX's persistent compilation cache "
             "in a fresh folder, the second process compiling the same programs.", "",
             "| process | " + " | ".join(label for _k, label in PHASES) + " |",
             "|---|" + "---|" * len(PHASES)]
    for name, ph in runs:
        lines.append(f"| {name} | " + " | ".join(f"{ph[k]:.2f}" if isinstance(ph.get(k), (int, float)) else ""
                                                  for k, _l in PHASES) + " |")
    if held:
        lines += ["", f"- The second opener, while the chip was held: {held.get('second_opener_said') or 'opened it'}.",
                  f"- The prestarted process opened the chip "
                  f"{held.get('prestarted_open_after_holder_ended_s')} s after the holder ended."]
    return lines + [""]
