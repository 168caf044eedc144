"""`pallas-autograder review SUBMISSIONS --assignment SLUG -o SITE`: regrade,
store, and write the site (the pieces: export, batch, progress, site)."""
from __future__ import annotations

import secrets
import sys
from dataclasses import dataclass
from pathlib import Path

from ..grading import assignments
from ..spec import Assignment
from . import batch, similar, site
from .export import ExportError, Submission, read_submissions
from .progress import Progress

CACHE = ".review-cache"
EXPORT = ".export"


@dataclass(frozen=True)
class Options:
    submissions: Path
    output: Path
    jobs: int | None = None
    dask: str | None = None
    force: bool = False
    timeout_s: float | None = None
    similarity_threshold: float | None = None   # None: as the site had it (default similar.DEFAULT_THRESHOLD)


@dataclass(frozen=True)
class Summary:
    """The students' submissions as this run's progress counted them, and the
    instructor solution apart (graded beside them as the TPU stage's baseline)."""
    graded: int            # graded now, with a score
    failed_now: int        # graded now, and the grading failed (crashed, timed out, an autograder error)
    stored: int            # unchanged since the last run: their stored gradings kept
    stored_failed: int     # of those, the ones whose grading had failed
    index: Path
    solution: str = ""     # the solution's grading: "graded now", "failed now", "unchanged" ("": none)

    def line(self) -> str:
        count = self.graded + self.failed_now + self.stored
        before = f", {self.stored_failed} of them failed" if self.stored_failed else ""
        sol = (f"; the instructor solution (counted apart): {self.solution}" if self.solution else "")
        return (f"{count} submission{'' if count == 1 else 's'}: {self.graded} graded now, {self.failed_now} "
                f"failed now (timed out, crashed or an autograder error), {self.stored} unchanged since the "
                f"last run (stored gradings kept{before}){sol}; open {self.index}")


SOLUTION = ".solution"      # the instructor solution, graded as a submission: the TPU stage's baseline


def _jobs(subs: list[Submission], a: Assignment, store: batch.Store, opts: Options
          ) -> tuple[list[batch.Job], dict[str, str]]:
    a_hash, g_hash = batch.assignment_hash(a), batch.grader_hash()
    timeout = opts.timeout_s or a.limits.gradescope_timeout_s + 60
    keys, todo = {}, []
    for sub in subs:
        key = batch.job_key(sub, a_hash, g_hash)
        keys[sub.id] = key
        if opts.force or store.get(key) is None:
            todo.append(batch.Job(sub.id, str(sub.folder.resolve()), a.slug, str(a.folder.parent.resolve()),
                                  timeout, key, sub.content_hash(), secrets.randbits(32)))
    return todo, keys


def _solution(a: Assignment, site: Path) -> Submission | None:
    """The instructor solution as a submission of its own (a folder in the site
    holding it under the entry file's name), for assignments the TPU stage times.
    Where ``solutions/<slug>.py`` is not beside the assignments (a TPU host is given
    the site, the export, the wheels and assignments/ only), the copy the site
    graded stands for it."""
    if a.speed is None:
        return None
    folder = site / SOLUTION / a.slug
    target = folder / a.entry_file
    if not a.solution.is_file():
        return Submission(f"{SOLUTION}/{a.slug}", folder) if target.is_file() else None
    folder.mkdir(parents=True, exist_ok=True)
    data = a.solution.read_bytes()
    if not target.is_file() or target.read_bytes() != data:
        target.write_bytes(data)
    return Submission(f"{SOLUTION}/{a.slug}", folder)


@dataclass(frozen=True)
class SolutionSource:
    """Where the instructor solution the TPU stage times came from, and whether the site's
    grading is of that very file (its grading's key holds the file's content hash)."""
    path: str                  # the file timed ("" when there is none)
    sha256: str                # its bytes' hash ("" when there is none)
    from_site: bool            # the site's copy (solutions/<slug>.py is not beside the assignments)
    graded: bool               # the site holds this grader's grading of exactly this file
    why: str = ""              # what is missing and where, when something is

    def said(self) -> str:
        if not self.path:
            return self.why
        where = ("taken from the review site (solutions/ is not beside the assignments here)" if self.from_site
                 else "solutions/ beside the assignments")
        graded = ("the file the site's grading of the solution was made from (same content hash)" if self.graded
                  else "the site holds no grading of this file under this grader, JAX release and assignment")
        return f"the instructor solution is {self.path} (sha256 {self.sha256[:16]}), {where}: {graded}"


def solution_source(a: Assignment, site: Path) -> SolutionSource:
    """Which solution file the stage would time, and whether the site graded exactly it."""
    import hashlib
    sol = _solution(a, site)
    if sol is None:
        return SolutionSource("", "", False, False, _no_solution(a, site))
    path = sol.folder / a.entry_file
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    graded = stored_solution(a, site) is not None
    why = "" if graded else _solution_ungraded(a, site, sol)
    return SolutionSource(str(path), digest, not a.solution.is_file(), graded, why)


def _no_solution(a: Assignment, site: Path) -> str:
    if a.speed is None:
        return f"{a.slug} has no [speed] section: the TPU stage times nothing for it"
    return (f"the instructor solution is in neither {a.solution} (solutions/ beside the assignments folder) nor "
            f"{site / SOLUTION / a.slug / a.entry_file} (the site's copy of the file it graded): the site was made "
            f"without it. Run `pallas-autograder review` again on the CPU machine from a checkout whose solutions/ "
            f"holds {a.slug}.py (it grades the solution into the site), or put that file at {a.solution}")


def _solution_ungraded(a: Assignment, site: Path, sol: Submission) -> str:
    """Why the site has no grading of this solution file: which gradings of the solution it has."""
    content = sol.content_hash()
    others = []
    for path in (site / CACHE).glob("*.json"):
        try:
            g = batch.Graded.from_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, TypeError):
            continue
        if g.submission_id == sol.id:
            same = "this very file" if g.content == content else "another version of the file"
            others.append(f"{same} under jax {g.jax or '?'}")
    seen = f"; it has gradings of {', '.join(sorted(set(others)))}" if others else "; it has no grading of the solution"
    return (f"{site} holds no grading of {sol.folder / a.entry_file} by this grader (jax {batch.jax_release()}) for "
            f"this assignment{seen} (a grading is keyed by the file, the grader's source, its JAX release and the "
            "assignment's files: any change misses it)")


def stored_solution(a: Assignment, site: Path) -> batch.Graded | None:
    """The site's grading of the instructor solution as it is now (None: none)."""
    sol = _solution(a, site)
    if sol is None:
        return None
    return batch.Store(site / CACHE).get(batch.job_key(sol, batch.assignment_hash(a), batch.grader_hash()))


def other_releases(site: Path, sub: Submission) -> list[str]:
    """The JAX releases that graded this very upload in ``site`` (when it has no
    grading under this grader's release): what to tell the instructor."""
    content = sub.content_hash()
    found = set()
    for path in (site / CACHE).glob("*.json"):
        try:
            g = batch.Graded.from_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, TypeError):
            continue
        if g.submission_id == sub.id and g.content == content and g.jax and g.jax != batch.jax_release():
            found.add(g.jax)
    return sorted(found)


def stored(a: Assignment, submissions: Path, site: Path) -> list[tuple[Submission, batch.Graded | None]]:
    """Each submission with the site's stored grading of it as it is now (None: none)."""
    subs = read_submissions(submissions, site / EXPORT)
    store = batch.Store(site / CACHE)
    a_hash, g_hash = batch.assignment_hash(a), batch.grader_hash()
    return [(sub, store.get(batch.job_key(sub, a_hash, g_hash))) for sub in subs]


def regrade(a: Assignment, opts: Options) -> Summary:
    out = opts.output
    out.mkdir(parents=True, exist_ok=True)
    subs = read_submissions(opts.submissions, out / EXPORT)
    store = batch.Store(out / CACHE)
    solution = _solution(a, out)
    todo, keys = _jobs(subs + ([solution] if solution else []), a, store, opts)
    sol_id = solution.id if solution else None
    progress = Progress(len(subs), cached=len(subs) - sum(j.submission_id != sol_id for j in todo))

    now: dict[str, bool] = {}

    def done(graded: batch.Graded) -> None:
        store.put(graded)
        ok = site.row(Submission(graded.submission_id, Path(".")), graded).status == "graded"
        now[graded.submission_id] = ok
        progress.update(graded.submission_id, ok, solution=graded.submission_id == sol_id)

    try:
        if opts.dask:
            batch.run_dask(todo, opts.dask, done)
        else:
            batch.run_local(todo, opts.jobs or batch.default_jobs(), done)
    finally:
        progress.close()
    rows = [site.row(sub, store.get(keys[sub.id])) for sub in subs]
    site.write(rows, out, a.title, a.slug, opts.similarity_threshold, a.folder.parent)
    kept = [r for r in rows if r.sub.id not in now]
    mine = [ok for sid, ok in now.items() if sid != sol_id]
    sol = "" if sol_id is None else "unchanged" if sol_id not in now else "graded now" if now[sol_id] else "failed now"
    return Summary(sum(mine), sum(not ok for ok in mine), len(kept), sum(r.failed for r in kept),
                   out / "index.html", sol)


def needs_review_extra(verb: str) -> None:
    """Exit with the install command when the [review] extra is missing (``verb`` reads or writes a site)."""
    try:
        import datasketch  # noqa: F401
        import markdown_it  # noqa: F401
        import yaml  # noqa: F401
    except ImportError as e:
        raise SystemExit(f"pallas-autograder {verb}: needs the [review] extra ({e.name} is missing): "
                         "run ./setup.sh in your pallas-autograder checkout, or `.venv/bin/pip install "
                         "'.[review]'` there") from None


def main(a: Assignment, opts: Options) -> int:
    needs_review_extra("review")
    try:
        summary = regrade(a, opts)
    except KeyboardInterrupt:
        stored = len(list((opts.output / CACHE).glob("*.json")))
        print(f"pallas-autograder review: interrupted; {stored} gradings are stored in {opts.output / CACHE}: "
              "run the same command again to continue", file=sys.stderr)
        return 130
    print(summary.line(), file=sys.stdout)
    return 0


def add_arguments(p) -> None:
    p.add_argument("submissions", type=Path, help="export folder or zip, or a folder of submission folders")
    p.add_argument("--assignment", "-a", required=True, help="assignment slug (see `list`)")
    p.add_argument("-o", "--output", type=Path, required=True, help="the site's folder (kept between runs: "
                   "gradings are stored there and reused while nothing changed)")
    p.add_argument("--jobs", "-j", type=int, help="gradings at once (default: what the cores and free "
                   "memory allow, about 0.5 GB each)")
    p.add_argument("--dask", metavar="ADDRESS", help="send the gradings to this Dask scheduler instead "
                   "(needs the [dask] extra)")
    p.add_argument("--force", action="store_true", help="regrade even what is stored")
    p.add_argument("--timeout", type=float, help="seconds one grading may take (default: the spec's "
                   "Gradescope timeout + 60)")
    p.add_argument("--similarity-threshold", type=float, metavar="SCORE",
                   help="list pairs of submissions whose canonical programs score at least this (0 < SCORE <= 1; "
                   f"default {similar.DEFAULT_THRESHOLD}, or what the site was last written with) on pairs.html")


def run(args) -> int:
    assignment = assignments.find(args.assignment, args.assignments)
    if args.jobs is not None and args.jobs < 1:
        args.parser.error(f"--jobs must be at least 1; got {args.jobs}")
    t = args.similarity_threshold
    if t is not None and not 0 < t <= 1:
        args.parser.error(f"--similarity-threshold must be above 0 and at most 1; got {t}")
    try:
        return main(assignment, Options(args.submissions, args.output, args.jobs, args.dask, args.force,
                                        args.timeout, t))
    except ExportError as e:
        args.parser.exit(1, f"pallas-autograder review: {e}\n")
