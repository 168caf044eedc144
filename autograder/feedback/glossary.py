"""GLOSSARY.md: what each number and word of the feedback means, for one
assignment (its cases, rungs, probe checks), written into the handout kit.
The feedback names it where those terms first appear (``legend``).
Nothing secret: a secret case is listed by number only. Imports no JAX."""
from __future__ import annotations

from pathlib import Path

import jinja2

from ..findings import CATALOGUE, RUNGS
from ..grading.probes import REGISTRY
from ..spec import Assignment

FILE = "GLOSSARY.md"
TEMPLATES = Path(__file__).resolve().parents[1] / "templates"

RUNG_NOTES = {
    "static": ": reads your traced kernel without running it: every index map at every grid point, the "
              "TPU lowering's rules, VMEM at the real problem size, where the work is done.",
    "generic": ": runs your kernel's real arithmetic one grid point at a time, in row-major order, with no "
               "memory model (a block outside an array is clamped, a DMA is a plain copy).",
    "tpu-interpret": ": simulates a TPU's memory (buffers, DMAs, semaphores), checks every block against "
                     "its array, shuffles the axes marked parallel and can run two cores; the grader also "
                     "turns on its race detector.",
    "tpu": ": the Mosaic compiler and the chip, the only rung that can refuse a kernel or time it; your own "
           "grading never runs here.",
}


# Said once, before the first test number or term: GLOSSARY.md explains each. Only
# the letters the report's tests use.
LETTERS = (("P", "probe checks"), ("S", "speed estimate"), ("T", "TPU timing"), ("C", "instructor checks"))


def legend(numbers) -> str:
    """The feedback's line on test numbers, for the tests it lists (their numbers)."""
    used = {str(n)[:1] for n in numbers}
    kinds = "".join(f"; {letter} = {what}" for letter, what in LETTERS if letter in used)
    return (f"Test numbers: n.1, n.2 = case n on each rung{kinds}. {FILE} in your handout explains every "
            "term of this report.")


def text(assignment: Assignment, names: dict[str, str | None] | None = None) -> str:
    """The glossary of ``assignment``. ``names``: the case names that may be shown
    (a secret case's is None); by default every case's visibility decides."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), undefined=jinja2.StrictUndefined,
                             autoescape=False, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    names = names or {c.name: (c.name if c.visible else None) for c in assignment.cases}
    return env.get_template("glossary.md.j2").render(
        title=assignment.title, slug=assignment.slug, entry=assignment.entry_file,
        cases=len(assignment.cases), case_names=[names.get(c.name) for c in assignment.cases],
        rungs=list(assignment.rungs), rung_labels=RUNGS, rung_notes=RUNG_NOTES,
        probes=[(p.name, REGISTRY[p.name].title) for p in assignment.probes],
        probe_notes={p.name: REGISTRY[p.name].note for p in assignment.probes},   # each in its probe's module
        speed=assignment.speed.chip if assignment.speed is not None else "",
        # Only a scored number is a test; an unscored one is a section above the tests.
        speed_scored=bool(assignment.speed and assignment.speed.points > 0),
        tpu_scored=bool(assignment.speed and assignment.speed.tpu_points > 0),
        checks=assignment.checks is not None, kinds=list(CATALOGUE.values()),
        # An example seed from a visible case (a secret case's seed is never shown).
        seed=next((c.seed for c in assignment.cases if c.visible), 101), seed_case=next(
            (c.name for c in assignment.cases if c.visible), "small"))
