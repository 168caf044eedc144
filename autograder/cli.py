"""The command line: `pallas-autograder VERB ...` (also `python -m autograder`).

Each verb's work lives in its own module (grade, build, harness); this file
only parses arguments and turns bad arguments into messages that say what is
valid.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from . import __version__


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pallas-autograder",
                                description="Grade JAX Pallas kernels on every interpreter rung.")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="verb", required=True, metavar="VERB")

    g = sub.add_parser("grade", help="grade a submission file or folder and print feedback")
    g.add_argument("submission", type=Path, help="a .py or .ipynb file, or a folder")
    g.add_argument("--assignment", "-a", required=True, help="assignment slug (see `list`)")
    g.add_argument("--results", type=Path, help="also write Gradescope results.json here")
    g.add_argument("--format", choices=("text", "md", "html"), default="text",
                   help="feedback format printed (default text); results.json uses md unless html")
    g.add_argument("--case", action="append", default=[], help="grade only this case (repeatable)")
    g.add_argument("--rung", action="append", default=[], choices=("generic", "tpu-interpret"),
                   help="grade only on this rung (repeatable)")
    g.add_argument("--case-timeout", type=float, help="seconds per case and rung (overrides the spec)")
    g.add_argument("--run-key", type=int, help="replay the input data of an earlier grading run "
                   "(its feedback shows the key); default: fresh data")
    g.add_argument("--assignments", type=Path, help="folder of assignment folders (default: bundled)")

    b = sub.add_parser("build", help="build the Gradescope autograder zip for an assignment")
    b.add_argument("slug")
    b.add_argument("-o", "--output", type=Path, required=True, help="zip file to write")
    b.add_argument("--assignments", type=Path, help="folder of assignment folders (default: bundled)")
    b.add_argument("--rate-limit", type=int, metavar="N",
                   help="grade at most N submissions per student per window (see --rate-window-hours)")
    b.add_argument("--rate-window-hours", type=float, default=24.0, help="the rate limit's window (default 24)")
    b.add_argument("--no-self-test", action="store_true",
                   help="skip installing the zip into a temporary root and grading the solution with it")

    gs = sub.add_parser("gradescope", help="grade as Gradescope does (what run_autograder calls)")
    gs.add_argument("--root", type=Path, help="the /autograder root (default $AUTOGRADER_ROOT or /autograder)")
    gs.add_argument("--assignment", help="slug (default: source/assignment.txt)")
    gs.add_argument("--staff-report", type=Path, help="also write the staff's report (secret cases' "
                    "evidence included) to this file, outside the results folder (used by `review`)")
    gs.add_argument("--programs", type=Path, help="also write the checked programs the TPU stage times "
                    "(JSON: name -> program) to this file (used by `review`)")

    c = sub.add_parser("calibrate", help="measure the instructor solution's time per run "
                       "(writes <assignment>/calibration.json; run limits derive from it)")
    c.add_argument("slug")
    c.add_argument("--solution", type=Path, help="the solution to measure (default solutions/SLUG.py)")
    c.add_argument("--repeat", type=int, default=3, help="gradings to take the slowest of (default 3)")
    c.add_argument("--assignments", type=Path, help="folder of assignment folders (default: bundled)")

    h = sub.add_parser("handout", help="write what students download: starter, README, notebook, "
                       "and a kit that grades the visible cases locally (nothing secret)")
    h.add_argument("slug")
    h.add_argument("-o", "--output", type=Path, required=True, help="a new (or empty) folder to write")
    h.add_argument("--assignments", type=Path, help="folder of assignment folders (default: bundled)")

    r = sub.add_parser("review", help="regrade a class (a Gradescope export, its zip, or a folder of "
                       "submission folders) and write a static review site with CSV exports")
    r.add_argument("submissions", type=Path, help="export folder or zip, or a folder of submission folders")
    r.add_argument("--assignment", "-a", required=True, help="assignment slug (see `list`)")
    r.add_argument("-o", "--output", type=Path, required=True, help="the site's folder (kept between runs: "
                   "gradings are stored there and reused while nothing changed)")
    r.add_argument("--jobs", "-j", type=int, help="gradings at once (default: what the cores and free "
                   "memory allow, about 0.5 GB each)")
    r.add_argument("--dask", metavar="ADDRESS", help="send the gradings to this Dask scheduler instead "
                   "(needs the [dask] extra)")
    r.add_argument("--force", action="store_true", help="regrade even what is stored")
    r.add_argument("--timeout", type=float, help="seconds one grading may take (default: the spec's "
                   "Gradescope timeout + 60)")
    r.add_argument("--assignments", type=Path, help="folder of assignment folders (default: bundled)")

    e = sub.add_parser("estimate", help="estimate a kernel's time on a TPU from its schedule, on CPU "
                       "(an estimate, not a measurement)")
    e.add_argument("submission", type=Path, help="a .py or .ipynb file, or a folder")
    e.add_argument("--assignment", "-a", required=True, help="assignment slug (see `list`)")
    e.add_argument("--chip", default="v5e", help="TPU chip (v4, v5e, v5p, v6e; default v5e)")
    e.add_argument("--size", help="dimension sizes, e.g. M=4096,K=4096,N=4096 (default: the spec's "
                   "production size, else its largest case)")
    e.add_argument("--dtype", help="input dtype (default: the production size's, else the case's)")
    e.add_argument("--json", action="store_true", help="print one JSON object")
    e.add_argument("--assignments", type=Path, help="folder of assignment folders (default: bundled)")

    sp = sub.add_parser("speed", help="time a class's passing kernels on a TPU (the rebuilt programs; "
                        "the instructor solution timed in the same run) and merge the results")
    sp.add_argument("submissions", type=Path, help="export folder or zip, or a folder of submission folders")
    sp.add_argument("--assignment", "-a", required=True, help="assignment slug (see `list`)")
    sp.add_argument("-o", "--output", type=Path, required=True, help="where speed.json and grades.csv go")
    sp.add_argument("--review", type=Path, help="a review site holding these submissions' gradings (default "
                    "OUT/review, graded here first); made elsewhere, no student code runs on this machine")
    sp.add_argument("--device", choices=("tpu", "fake"), default="tpu",
                    help="tpu (default), or fake: a dry run with scripted times, not measurements")
    sp.add_argument("--solution", type=Path, help="the instructor solution (default solutions/SLUG.py)")
    sp.add_argument("--jobs", "-j", type=int, help="interpreter gradings at once (see review)")
    sp.add_argument("--assignments", type=Path, help="folder of assignment folders (default: bundled)")

    mg = sub.add_parser("merge", help="merge a speed.json (the TPU stage's results) into a review site "
                        "and per-submission results.json files")
    mg.add_argument("speed_json", type=Path)
    mg.add_argument("submissions", type=Path, help="the export the site was made from")
    mg.add_argument("--assignment", "-a", required=True, help="assignment slug (see `list`)")
    mg.add_argument("--review", type=Path, required=True, help="the review site to update")
    mg.add_argument("--assignments", type=Path, help="folder of assignment folders (default: bundled)")

    n = sub.add_parser("new", help="scaffold a new assignment: spec, reference, README, corpus, solution")
    n.add_argument("slug", help="a Python identifier: the folder, entry file and function name")
    n.add_argument("--like", help="copy this existing assignment's spec instead of the template")
    n.add_argument("--assignments", type=Path, help="folder of assignment folders (default: ./assignments)")

    k = sub.add_parser("check", help="the assignment's own test: it resolves, its solution is clean, "
                       "its corpus gets its declared findings, its cases expose what they claim")
    k.add_argument("slug")
    k.add_argument("--assignments", type=Path, help="folder of assignment folders (default: bundled)")
    k.add_argument("--quick", action="store_true", help="only what build checks: the spec and what it names")
    k.add_argument("--estimate-container", action="store_true",
                   help="estimate the time at 0.5 CPU from this machine's (x3.0) instead of measuring "
                        "it under cgroups (measured by default where this machine allows, as root)")

    ls = sub.add_parser("list", help="list the available assignments")
    ls.add_argument("--assignments", type=Path, help="folder of assignment folders")
    return p


def _assignment(slug: str, folder: Path | None, parser: argparse.ArgumentParser):
    from . import spec
    try:
        return spec.find(slug, folder)
    except LookupError as e:
        parser.error(str(e.args[0]))
    except spec.SpecError as e:
        parser.exit(2, f"pallas-autograder: broken assignment spec: {e}\n")


def main(argv: list[str] | None = None) -> int:
    """The CLI; Ctrl-C and a closed pipe (``| head``) end with one line, not a traceback."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("\npallas-autograder: interrupted; nothing was written", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (| head): stop quietly, and keep Python from
        # complaining again when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _estimate(args, parser: argparse.ArgumentParser) -> int:
    import json

    from .speed import model as speed
    from .tpu import estimate
    assignment = _assignment(args.assignment, args.assignments, parser)
    try:
        size = estimate.parse_size(args.size) if args.size else None
        result, why, case = estimate.run(assignment, args.submission, args.chip, size, args.dtype)
    except estimate.EstimateError as e:
        parser.exit(1, f"pallas-autograder estimate: {e}\n")
    if result is None:
        parser.exit(1, f"pallas-autograder estimate: no estimate: {why}\n")
    where = {"dims": dict(case.dims), "dtype": case.dtype}
    if args.json:
        print(json.dumps({**result.to_json(), **where}))
    else:
        dims = ", ".join(f"{k}={v}" for k, v in case.dims)
        print(f"{assignment.entry_function} at {dims}, {case.dtype}:")
        print(speed.text(result))
    return 0


def _main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.verb == "list":
        from . import spec
        slugs = spec.available(args.assignments)
        for slug in slugs:
            print(slug)
        if not slugs:
            where = ", ".join(str(p) for p in spec.search_path(args.assignments))
            print(f"pallas-autograder: no assignments found (looked in {where}); give --assignments DIR "
                  f"or set {spec.ENV}", file=sys.stderr)
        return 0 if slugs else 1
    if args.verb == "gradescope":
        from .gradescope import run as harness
        return harness.run_gradescope(args.root, args.assignment, args.staff_report, args.programs)
    if args.verb == "review":
        from .review import ExportError, command
        assignment = _assignment(args.assignment, args.assignments, parser)
        if args.jobs is not None and args.jobs < 1:
            parser.error(f"--jobs must be at least 1; got {args.jobs}")
        try:
            return command.main(assignment, command.Options(args.submissions, args.output, args.jobs,
                                                            args.dask, args.force, args.timeout))
        except ExportError as e:
            parser.exit(1, f"pallas-autograder review: {e}\n")
    if args.verb == "estimate":
        return _estimate(args, parser)
    if args.verb == "speed":
        from .instructor import calibrate
        from .tpu import command as speed_command
        a = _assignment(args.assignment, args.assignments, parser)
        return speed_command.main(a, speed_command.Options(args.submissions, args.output, args.review,
                                                           args.device, jobs=args.jobs),
                                  args.solution or calibrate.solution_path(a))
    if args.verb == "merge":
        from .tpu import merge
        a = _assignment(args.assignment, args.assignments, parser)
        return merge.main(a, args.speed_json, args.submissions, args.review)
    if args.verb == "calibrate":
        from .instructor import calibrate
        assignment = _assignment(args.slug, args.assignments, parser)
        try:
            path, summary = calibrate.calibrate(assignment, args.solution, args.repeat)
        except ValueError as e:
            parser.exit(1, f"pallas-autograder calibrate: {e}\n")
        print(f"wrote {path}: {summary['runs']} runs, slowest {summary['slowest_s']:.2f} s, "
              f"start-up {summary['startup_s']:.2f} s")
        return 0
    if args.verb == "handout":
        from . import spec
        from .instructor import handout, starter
        assignment = _assignment(args.slug, args.assignments, parser)
        try:
            files = handout.write(assignment, args.output)
        except (handout.HandoutError, starter.StarterError, spec.SpecError, RuntimeError, OSError) as e:
            parser.exit(1, f"pallas-autograder handout: {e}\n")
        print(f"wrote {len(files)} files to {args.output}: {assignment.entry_file} (the starter), README.md, "
              f"{assignment.slug}.ipynb, and the local grader (python -m autograder grade "
              f"{assignment.entry_file} -a {assignment.slug}, run in that folder)")
        return 0
    if args.verb == "new":
        from .instructor import scaffold
        try:
            made = scaffold.new(args.slug, args.assignments or Path("assignments"), args.like)
        except scaffold.ScaffoldError as e:
            parser.exit(1, f"pallas-autograder new: {e}\n")
        print("wrote " + ", ".join(str(p) for p in made))
        return 0
    if args.verb == "check":
        from .instructor import check
        assignment = _assignment(args.slug, args.assignments, parser)
        rows = check.run(assignment, quick_only=args.quick, progress=sys.stderr.isatty(),
                         estimate_only=args.estimate_container)
        print(check.table(rows))
        return 0 if all(r.ok for r in rows) else 1
    if args.verb == "build":
        from .gradescope import build
        from .instructor import check
        assignment = _assignment(args.slug, args.assignments, parser)
        rows = check.quick(assignment)
        if not all(r.ok for r in rows):
            # A zip that cannot grade would show every student "autograder error".
            parser.exit(1, f"pallas-autograder build: not writing {args.output}: the assignment "
                        f"cannot grade\n{check.table(rows)}\n")
        from .gradescope import rate_limit
        try:
            limit = (rate_limit.Limit(args.rate_limit, args.rate_window_hours)
                     if args.rate_limit is not None else None)
        except ValueError as e:
            parser.error(str(e))
        try:
            path = build.build(assignment, args.output, self_test=not args.no_self_test, rate_limit=limit)
        except build.SelfTestFailed as e:
            parser.exit(1, f"pallas-autograder build: not writing {args.output}: self-test failed: {e}\n")
        tested = "" if args.no_self_test else " (self-test: the solution got full marks from the zip)"
        print(f"wrote {path}{tested}: upload it as the autograder of a Gradescope programming assignment")
        return 0
    return _grade(args, parser)


def _grade(args, parser) -> int:
    from .feedback import render, results as gradescope, terminal
    from .grading import grade
    from .isolation.sandbox import GraderFailure
    assignment = _assignment(args.assignment, args.assignments, parser)
    progress = terminal.Progress()
    try:
        options = grade.GradeOptions(cases=tuple(args.case), rungs=tuple(args.rung),
                                     case_timeout_s=args.case_timeout, run_key=args.run_key,
                                     progress=progress)
        grade.select(assignment, options)
    except KeyError as e:
        # Secret cases are never listed (a student may run this).
        parser.error(f"unknown case or rung {e.args[0]!r} for {assignment.slug}; valid cases: "
                     f"{', '.join(c.name for c in assignment.cases if c.visible)}; rungs: "
                     f"{', '.join(assignment.rungs)}")
    if not args.submission.exists():
        parser.error(f"submission {args.submission} does not exist; give a .py or .ipynb file or a folder")
    try:
        report = grade.grade(assignment, args.submission, options)
        view = render.report_view(report)
        if args.results:
            gradescope.write(gradescope.results_document(report, "html" if args.format == "html" else "md",
                                                         view), args.results)
    except Exception as exc:  # the grader failed, not the student: still leave results
        if args.results:
            gradescope.write(gradescope.catastrophic(exc), args.results)
        if isinstance(exc, GraderFailure):
            progress.clear()
            parser.exit(3, f"pallas-autograder: autograder error (not your submission's fault): {exc}\n")
        raise
    finally:
        progress.clear()
    text = render.render_report(view, args.format)
    if args.format == "text" and terminal.wants_colour(sys.stdout):
        text = terminal.colour(text)
    print(text, end="" if text.endswith("\n") else "\n")
    sys.stdout.flush()
    if args.results:
        print(f"results written to {args.results}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
