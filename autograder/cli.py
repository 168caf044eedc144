"""The command line: `pallas-autograder VERB ...` (also `python -m autograder`).

The CLI is a table of verbs. Each verb is a module of its role's folder that
declares its own arguments (``add_arguments(parser)``) and does its work
(``run(args) -> exit status``); the module is imported only when its verb
runs, and a verb whose module this install lacks (the student kit has no
``instructor/``) is not offered. A verb may refuse with ``args.parser.error``
(bad arguments, exit 2) or ``args.parser.exit(1, ...)``; an unknown
assignment or a broken spec is turned into a message here, for every verb.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from . import __version__, spec


@dataclass(frozen=True)
class Verb:
    name: str
    module: str              # declares add_arguments(parser) and run(args)
    help: str
    assignments: bool = True  # takes --assignments DIR
    needs: tuple[str, ...] = ()   # role folders it imports that an install may lack (tests/test_layers.py)


VERBS = (
    Verb("grade", "autograder.gradescope.local", "grade a submission file or folder and print feedback"),
    Verb("estimate", "autograder.tpu.estimate", "estimate a kernel's time on a TPU from its schedule, on CPU "
         "(an estimate, not a measurement)"),
    Verb("list", "autograder.spec.listing", "list the available assignments"),
    Verb("new", "autograder.instructor.scaffold", "scaffold a new assignment: spec, reference, README, corpus, "
         "solution"),
    Verb("check", "autograder.instructor.check", "the assignment's own test: it resolves, its solution is "
         "clean, its corpus gets its declared findings, its cases expose what they claim"),
    Verb("calibrate", "autograder.instructor.calibrate", "measure the instructor solution's time per run "
         "(writes <assignment>/calibration-<jax release>.json; run limits derive from it)"),
    Verb("handout", "autograder.instructor.handout", "write what students download: starter, README, notebook, "
         "and a kit that grades the visible cases locally (nothing secret)"),
    Verb("build", "autograder.gradescope.build", "build the Gradescope autograder zip for an assignment",
         needs=("autograder.instructor",)),
    Verb("gradescope", "autograder.gradescope.run", "grade as Gradescope does (what run_autograder calls)",
         assignments=False),
    Verb("review", "autograder.review.command", "regrade a class (a Gradescope export, its zip, or a folder of "
         "submission folders) and write a static review site with CSV exports"),
    Verb("speed", "autograder.tpu.command", "time a class's passing kernels on a TPU (the rebuilt programs; "
         "the instructor solution timed in the same run) and merge the results"),
    Verb("on-chip", "autograder.tpu.onchip", "your own check on a real TPU (a Colab TPU runtime): compile your "
         "kernel with the TPU compiler and run it at the visible cases; never the grade"),
    Verb("merge", "autograder.tpu.merge", "merge a speed.json (the TPU stage's results) into a review site "
         "and per-submission results.json files"),
)


def installed(verb: Verb) -> bool:
    """The verb's module, and every folder it needs, are part of this install
    (the student kit leaves the instructor's tools out)."""
    try:
        return all(importlib.util.find_spec(m) is not None for m in (verb.module, *verb.needs))
    except ModuleNotFoundError:
        return False


def _parser(chosen: str | None) -> argparse.ArgumentParser:
    """Every installed verb is listed; only the chosen one's module is imported for its arguments."""
    p = argparse.ArgumentParser(prog="pallas-autograder",
                                description="Grade JAX Pallas kernels on every interpreter rung.")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="verb", required=True, metavar="VERB")
    for verb in VERBS:
        if not installed(verb):
            continue
        vp = sub.add_parser(verb.name, help=verb.help, description=verb.help)
        vp.set_defaults(parser=vp, run_verb=verb)
        if verb.name == chosen:
            importlib.import_module(verb.module).add_arguments(vp)
            if verb.assignments:
                vp.add_argument("--assignments", type=Path, help="folder of assignment folders (default: "
                                f"--assignments, ${spec.ENV}, ./assignments, then the bundled ones)")
    return p


def _chosen(argv: list[str]) -> str | None:
    """The verb named on the command line (the first word that is not an option)."""
    return next((a for a in argv if not a.startswith("-")), None)


def main(argv: list[str] | None = None) -> int:
    """The CLI; Ctrl-C and a closed pipe (``| head``) end with one line, not a traceback."""
    try:
        return _main(sys.argv[1:] if argv is None else argv)
    except KeyboardInterrupt:
        print("\npallas-autograder: interrupted; nothing was written", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (| head): stop quietly, and keep Python from
        # complaining again when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _main(argv: list[str]) -> int:
    args = _parser(_chosen(argv)).parse_args(argv)
    module = importlib.import_module(args.run_verb.module)
    try:
        return module.run(args)
    except spec.UnknownAssignment as e:     # names the valid ones and where it looked
        args.parser.error(str(e))
    except spec.SpecError as e:
        args.parser.exit(2, f"pallas-autograder: broken assignment spec: {e}\n")


if __name__ == "__main__":
    sys.exit(main())
