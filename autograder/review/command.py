"""`pallas-autograder review SUBMISSIONS --assignment SLUG -o SITE`: regrade,
store, and write the site (the pieces: export, batch, progress, site)."""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from ..spec import Assignment
from . import batch, site
from .export import Submission, read_submissions
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


@dataclass(frozen=True)
class Summary:
    graded: int            # graded now
    stored: int            # taken from the store (graded before, unchanged)
    failed: int            # crashed or timed out, now or before
    index: Path


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
                                  timeout, key))
    return todo, keys


def stored(a: Assignment, submissions: Path, site: Path) -> list[tuple[Submission, batch.Graded | None]]:
    """Each submission with the site's stored grading of it as it is now (None: none)."""
    subs = read_submissions(submissions, site / EXPORT)
    store = batch.Store(site / CACHE)
    a_hash, g_hash = batch.assignment_hash(a), batch.grader_hash()
    return [(sub, store.get(batch.job_key(sub, a_hash, g_hash))) for sub in subs]


def run(a: Assignment, opts: Options) -> Summary:
    out = opts.output
    out.mkdir(parents=True, exist_ok=True)
    subs = read_submissions(opts.submissions, out / EXPORT)
    store = batch.Store(out / CACHE)
    todo, keys = _jobs(subs, a, store, opts)
    progress = Progress(len(subs), cached=len(subs) - len(todo))

    def done(graded: batch.Graded) -> None:
        store.put(graded)
        progress.update(graded.submission_id, graded.status == "graded")

    try:
        if opts.dask:
            batch.run_dask(todo, opts.dask, done)
        else:
            batch.run_local(todo, opts.jobs or batch.default_jobs(), done)
    finally:
        progress.close()
    rows = [site.row(sub, store.get(keys[sub.id])) for sub in subs]
    site.write(rows, out, a.title, a.slug)
    failed = sum(1 for r in rows if r.status != "graded")
    return Summary(len(todo), len(subs) - len(todo), failed, out / "index.html")


def needs_review_extra(verb: str) -> None:
    """Exit with the install command when the [review] extra is missing (``verb`` reads or writes a site)."""
    try:
        import markdown_it  # noqa: F401
        import yaml  # noqa: F401
    except ImportError as e:
        raise SystemExit(f"pallas-autograder {verb}: needs the [review] extra ({e.name} is missing): "
                         "pip install 'pallas-autograder[review]'") from None


def main(a: Assignment, opts: Options) -> int:
    needs_review_extra("review")
    try:
        summary = run(a, opts)
    except KeyboardInterrupt:
        stored = len(list((opts.output / CACHE).glob("*.json")))
        print(f"pallas-autograder review: interrupted; {stored} gradings are stored in {opts.output / CACHE}: "
              "run the same command again to continue", file=sys.stderr)
        return 130
    print(f"{summary.graded} graded now, {summary.stored} unchanged since the last run, "
          f"{summary.failed} failed; open {summary.index}", file=sys.stdout)
    return 0
