"""The spec students may hold: every case whose data is secret removed.

The student kit grades with it exactly as Gradescope grades the visible cases
(same code, same cases, seeds and limits); what it leaves out is what the
feedback never shows: secret cases' names, shapes, seeds and parameters.
"""
from __future__ import annotations

import json
import tomllib
from pathlib import Path

from ..grading.assignments import load
from ..grading.run import calibration
from ..spec import Assignment
from . import toml_text

HEADER = ("The public spec of this assignment, written by `pallas-autograder handout`:\n"
          "the graded cases whose data is not secret. Gradescope also grades secret cases,\n"
          "and runs the instructor's own checks, if any.")


def public_data(assignment: Assignment) -> dict:
    """The spec's TOML data without its secret cases (and without probe_cases
    naming them), and without the instructor's checks."""
    data = tomllib.loads((assignment.folder / "spec.toml").read_text(encoding="utf-8"))
    shown = {c.name for c in assignment.cases if c.visible}
    data["cases"] = [c for c in data.get("cases", []) if c.get("name") in shown]
    data.pop("checks", None)      # the instructor's checks hold expected values: Gradescope only
    data["jax"] = assignment.jax  # the course's release (handout --jax may have chosen it)
    if "probe_cases" in data:
        data["probe_cases"] = [n for n in data["probe_cases"] if n in shown]
    return data


def write(assignment: Assignment, folder: Path) -> Assignment:
    """Write the public assignment folder (spec, reference, the visible runs'
    calibration) and return it loaded, so a spec the kit cannot read is an
    error here, not on a student's machine."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "spec.toml").write_text(toml_text.dumps(public_data(assignment), HEADER), encoding="utf-8")
    ref_file = assignment.reference.partition(":")[0]
    (folder / ref_file).write_bytes((assignment.folder / ref_file).read_bytes())
    public = load(folder)
    # The calibration of the release the course grades on (the kit's local grading runs it).
    name = calibration.file_name(assignment.jax)
    cal_path = assignment.folder / name
    if cal_path.is_file():
        cal = json.loads(cal_path.read_text(encoding="utf-8"))
        shown = {c.name for c in public.cases}
        cal["runs"] = [r for r in cal.get("runs", []) if r.get("case") in shown]
        cal["spec_sha256"] = calibration.spec_hash(public)
        (folder / name).write_text(json.dumps(cal, indent=1) + "\n", encoding="utf-8")
    return public
