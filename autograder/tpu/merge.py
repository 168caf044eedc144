"""`pallas-autograder merge SPEED_JSON SUBMISSIONS -a SLUG --review SITE`:
the TPU stage's results into the review site (its stored results.json, its
pages, its grades.csv) and into one merged results.json per submission
(``SITE/merged/<id>/results.json``), e.g. when the timing ran on another
machine. `speed` calls the same function at its end."""
from __future__ import annotations

import json
from pathlib import Path

from ..feedback.results_format import validate
from ..grading import assignments
from ..spec import Assignment
from .stage import results as tpu_results


def into_site(a: Assignment, doc: dict, submissions: Path, site: Path) -> int:
    """Merge every result of ``doc`` (speed.json) whose submission the site holds; returns how many."""
    from dataclasses import replace

    from ..review import batch, command as review, site as pages
    store = batch.Store(site / review.CACHE)
    by_id = {str(r["submission"]): r for r in doc["results"]}
    solution_s = (doc.get("solution") or {}).get("seconds")
    merged, rows = 0, []
    for sub, g in review.stored(a, submissions, site):
        r = by_id.get(sub.id)
        if g is not None and g.results is not None and r is not None:
            new = tpu_results.merge(g.results, a.speed, r, doc["device"], solution_s)
            problems = validate(new)
            if problems:
                raise ValueError(f"merged results for {sub.id} are invalid: {problems[:3]}")
            g = replace(g, results=new)
            store.put(g)
            folder = site / "merged" / pages.slug_of(sub.id)
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "results.json").write_text(json.dumps(new, indent=2), encoding="utf-8")
            merged += 1
        rows.append(pages.row(sub, g))
    pages.write(rows, site, a.title, a.slug, assignments=a.folder.parent)
    return merged


def main(a: Assignment, speed_json: Path, submissions: Path, site: Path) -> int:
    from ..review.command import needs_review_extra
    needs_review_extra("merge")
    doc = json.loads(speed_json.read_text(encoding="utf-8"))
    if doc.get("assignment") != a.slug:
        raise SystemExit(f"{speed_json} holds results for {doc.get('assignment')!r}, not {a.slug!r}")
    n = into_site(a, doc, submissions, site)
    print(f"merged {n} TPU results into {site} (pages, grades.csv, merged/<id>/results.json)")
    return 0


def add_arguments(p) -> None:
    p.add_argument("speed_json", type=Path)
    p.add_argument("submissions", type=Path, help="the export the site was made from")
    p.add_argument("--assignment", "-a", required=True, help="assignment slug (see `list`)")
    p.add_argument("--review", type=Path, required=True, help="the review site to update")


def run(args) -> int:
    a = assignments.find(args.assignment, args.assignments)
    return main(a, args.speed_json, args.submissions, args.review)
