"""The review site: plain data from the stored gradings, rendered by jinja2
templates into static files that open from file:// (no server, no CDN), and
the CSV exports.

index.html     overview (score histogram, findings per ID with the points they
               cost, failed gradings, the rung where bugs were first caught:
               every count a link that filters the table), structural
               clusters, and the table of submissions, those who need help
               first (failed gradings, then the lowest scores), sortable
s/<id>.html    one page per submission: why a grading failed, the feedback the
               student saw, as Gradescope renders it, then the staff-only part
pairs.html     near-duplicate pairs (``similar``): what the score is and is not,
               the pairs at or above the threshold, best first
p/<n>.html     one page per listed pair: the two canonical programs side by
               side, what differs highlighted
grades.csv     one row per student; findings.csv one row per submission and finding
"""
from __future__ import annotations

import csv
import json
import re
import shlex
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from ..feedback import blockmaps, escaping
from ..grading.identity import likeness
from . import similar, testlinks
from .batch import Graded
from .export import Submission

TEMPLATES = Path(__file__).resolve().parent.parent / "templates" / "review"
RUNG_ORDER = ("static", "generic", "tpu-interpret")
RUNG_NAMES = {"static": "static analysis (nothing runs)", "generic": "generic interpreter",
              "tpu-interpret": "TPU interpret mode"}
BINS = 10               # histogram ranges below full marks (which have a bar of their own)
MAX_PAIRS = 200         # rows (and pages) on pairs.html; the rest are counted, with how to see them
OPTIONS = ".review-options.json"    # the site's options, kept for a later rewrite (``merge``)


@dataclass(frozen=True)
class Lost:
    number: str
    name: str
    finding: str
    rung: str
    points: float


@dataclass(frozen=True)
class Row:
    sub: Submission
    graded: Graded | None
    score: float | None
    max_score: float | None
    lost: tuple[Lost, ...]

    @property
    def status(self) -> str:
        if self.graded is None:
            return "not graded"
        if self.graded.status != "graded":
            return self.graded.status              # crashed or timed out
        return "autograder error" if self.autograder_error or self.score is None else "graded"

    @property
    def autograder_error(self) -> bool:
        tests = (self.graded.results or {}).get("tests", []) if self.graded else []
        return any("autograder-error" in (t.get("tags") or []) for t in tests)

    @property
    def failed(self) -> bool:
        """The grading gave no usable score (crashed, timed out, an autograder error, not graded)."""
        return self.status != "graded"

    @property
    def costs(self) -> tuple[tuple[str, float], ...]:
        """Every finding ID with the points it cost in all, costliest first (then in test
        order): a class that forgot the running max shows numerics beside wrong-result."""
        by_id: dict[str, float] = {}
        for lost in self.lost:
            by_id[lost.finding] = by_id.get(lost.finding, 0.0) + lost.points
        order = list(by_id)
        return tuple(sorted(by_id.items(), key=lambda kv: (-kv[1], order.index(kv[0]))))

    @property
    def need(self) -> tuple:
        """The default order, most in need of a TA first: failed gradings, then the
        lowest share of the points, then by name."""
        share = self.score / self.max_score if self.score is not None and self.max_score else 0.0
        return (not self.failed, share, self.sub.names.lower(), self.sub.id)

    @property
    def first_rung(self) -> str:
        """The earliest rung that caught a bug (a file that cannot be graded caught none)."""
        rungs = [lost.rung for lost in self.lost if lost.rung in RUNG_ORDER and lost.finding != "submission-error"]
        return min(rungs, key=RUNG_ORDER.index) if rungs else ""

    @property
    def differs(self) -> bool:
        gs = self.sub.gradescope_score
        return gs is not None and self.score is not None and abs(gs - self.score) > 1e-6

    @property
    def extra(self) -> dict:
        return ((self.graded.results or {}).get("extra_data") or {}) if self.graded else {}

    @property
    def page(self) -> str:
        return f"s/{slug_of(self.sub.id)}.html"


def slug_of(text: str) -> str:
    """A file name for a submission id (ids come from the export: never trusted as paths)."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", text)[:80].lstrip(".")
    return safe or "submission"


def row(sub: Submission, graded: Graded | None) -> Row:
    # A grading stopped by its limit left only the grader's placeholder results.
    doc = graded.results if graded and graded.status != "timeout" else None
    if not isinstance(doc, dict):
        return Row(sub, graded, None, None, ())
    lost = []
    tests = [t for t in doc.get("tests", []) if isinstance(t, dict)]
    for t in tests:
        missing = float(t.get("max_score", 0) or 0) - float(t.get("score", 0) or 0)
        if t.get("status") == "failed" and t.get("tags"):
            data = t.get("extra_data") or {}
            lost.append(Lost(str(t.get("number", "")), str(t.get("name", "")), str(t["tags"][0]),
                             str(data.get("rung", "")), max(missing, 0.0)))
    max_score = sum(float(t.get("max_score", 0) or 0) for t in tests)
    return Row(sub, graded, float(doc.get("score", 0.0)), max_score, tuple(lost))


def _share_bin(r: Row, bins: int) -> str:
    """A graded row's histogram bar: "full" for full marks, else the tenth of the points it reached."""
    share = r.score / r.max_score if r.score is not None and r.max_score else 0.0
    return "full" if share >= 1 - 1e-9 else str(min(int(share * bins), bins - 1))


def histogram(rows: list[Row], bins: int = BINS) -> dict[str, Any]:
    """Bars of the score distribution: ``bins`` ranges of the best possible score, each
    from its tick up to the next (full marks excluded), then full marks, a bar of its own."""
    scored = [r for r in rows if r.score is not None and r.max_score]
    top = max((r.max_score for r in scored), default=1.0) or 1.0
    counts = Counter(_share_bin(r, bins) for r in scored)
    peak = max(counts.values(), default=0) or 1
    bars = []
    for key in [*map(str, range(bins)), "full"]:
        lo, hi = (top, top) if key == "full" else (top * int(key) / bins, top * (int(key) + 1) / bins)
        words = f"full marks ({top:g})" if key == "full" else f"{lo:.3g} to under {hi:.3g}"
        bars.append({"key": key, "label": words, "tick": f"{lo:.3g}", "count": counts.get(key, 0),
                     "h": round(120 * counts.get(key, 0) / peak)})
    return {"bars": bars, "top": top}


def finding_chart(rows: list[Row]) -> list[dict[str, Any]]:
    """How many submissions hit each finding ID and the points it cost them in all,
    largest first (horizontal bars, as a share of the largest)."""
    hits: Counter = Counter()
    points: Counter = Counter()
    for r in rows:
        for fid, pts in r.costs:
            hits[fid] += 1
            points[fid] += pts
    peak = max(hits.values(), default=1)
    return [{"id": fid, "count": n, "points": points[fid], "w": round(100 * n / peak)}
            for fid, n in sorted(hits.items(), key=lambda kv: (-kv[1], kv[0]))]


def clusters(rows: list[Row]) -> list[dict[str, Any]]:
    """Submissions whose traced kernels are structurally identical, largest groups first."""
    groups: dict[str, list[Row]] = {}
    for r in rows:
        fp = r.extra.get("fingerprint")
        if isinstance(fp, str) and fp:
            groups.setdefault(fp, []).append(r)
    out = [{"fingerprint": fp, "size": len(members),
            "members": [{"id": m.sub.id, "names": m.sub.names, "page": m.page,
                         "score": m.score} for m in members]}
           for fp, members in groups.items() if len(members) > 1]
    return sorted(out, key=lambda c: (-c["size"], c["fingerprint"]))


def likeness_of(r: Row) -> likeness.Likeness | None:
    """The graded kernel's program (the first correctness case's, kept with the
    grading by ``gradescope --programs``) as the score sees it; None without one
    (the file did not trace, or the grading was stopped)."""
    programs = (r.graded.programs or {}) if r.graded else {}
    name = next((k for k in sorted(programs) if k.startswith("check:")), None)
    if name is None:
        return None
    try:
        return likeness.of(json.loads(programs[name]))
    except MemoryError:
        raise
    except Exception:  # noqa: BLE001 - a stored document the grader did not write: no likeness
        return None


def _member(r: Row) -> dict[str, Any]:
    return {"id": r.sub.id, "names": r.sub.names or r.sub.id, "page": r.page, "score": r.score,
            "max_score": r.max_score}


def near_duplicates(rows: list[Row], threshold: float) -> dict[str, Any]:
    """The near-duplicate section's data: submissions that share one canonical
    program (score 1) and pairs of different programs at or above ``threshold``,
    best first, each with the page that shows them."""
    by_id = {r.sub.id: r for r in rows}
    likes = {r.sub.id: like for r in rows if (like := likeness_of(r)) is not None}
    found = similar.find(likes, threshold)
    entries = [{"kind": "same", "score": 1.0, "a": found.programs[i], "b": None, "pair": None}
               for i in range(len(found.programs)) if len(found.programs[i].ids) > 1]
    entries += [{"kind": "near", "score": pair.score, "a": found.programs[pair.a], "b": found.programs[pair.b],
                 "pair": pair} for pair in found.pairs]
    entries.sort(key=lambda e: (-e["score"], e["kind"] != "same", e["a"].ids[0]))
    listed = []
    for n, e in enumerate(entries[:MAX_PAIRS], 1):
        a, b, pair = e["a"], e["b"], e["pair"]
        listed.append({"n": n, "page": f"p/{n}.html", "kind": e["kind"], "score": e["score"],
                       "a": [_member(by_id[i]) for i in a.ids], "b": [_member(by_id[i]) for i in b.ids] if b else [],
                       "shared": pair.shared if pair else len(a.likeness.shingles),
                       "only_a": pair.only_a if pair else 0, "only_b": pair.only_b if pair else 0,
                       "programs": (a.likeness.listing, b.likeness.listing if b else None)})
    return {"threshold": threshold, "rows": listed, "more": max(0, len(entries) - MAX_PAIRS),
            "compared": len(likes), "without": len(rows) - len(likes), "programs": len(found.programs),
            "scored": found.scored, "pairs": len(found.pairs), "common": found.common,
            "min_class": similar.MIN_CLASS,
            "same": sum(1 for e in entries if e["kind"] == "same")}


def pair_page(entry: dict[str, Any]) -> dict[str, Any]:
    """One listed row's page: the two listings aligned, or the one listing a group shares."""
    a, b = entry["programs"]
    diff = similar.side_by_side(a, b) if b is not None else tuple(
        similar.DiffRow("same", similar.Side(i + 1, ((line, False),)), None) for i, line in enumerate(a))
    return {**entry, "diff": diff, "changed": sum(1 for r in diff if r.kind != "same")}


def threshold_of(out: Path, threshold: float | None) -> float:
    """The threshold asked now, else the one the site was last written with, else the default."""
    if threshold is not None:
        return threshold
    try:
        saved = json.loads((out / OPTIONS).read_text(encoding="utf-8"))["similarity_threshold"]
        return float(saved) if 0 < float(saved) <= 1 else similar.DEFAULT_THRESHOLD
    except (OSError, ValueError, KeyError, TypeError):
        return similar.DEFAULT_THRESHOLD


def _md() -> Any:
    from markdown_it import MarkdownIt
    # Raw HTML off: what the student controls is shown as text, never as markup.
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    md.core.ruler.push("test_links", testlinks.rule)     # "test 1.2" links to that test's section
    return md


def _env() -> jinja2.Environment:
    # The parent folder for what the site shares with the HTML report (blockmap.css.j2).
    env = jinja2.Environment(loader=jinja2.FileSystemLoader([str(TEMPLATES), str(TEMPLATES.parent)]),
                             autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             finalize=escaping.visible)
    md = _md()
    # ``anchors``: the page's tests (sections id="test-N"), which a sentence naming one links to.
    env.filters["markdown"] = lambda text, anchors=(): jinja2.utils.markupsafe.Markup(
        md.render(text or "", {"anchors": list(anchors)}))
    env.filters["num"] = lambda v: "" if v is None else f"{v:g}"
    return env


def _table_row(r: Row, need: int = 0) -> dict[str, Any]:
    return {"id": r.sub.id, "names": r.sub.names, "emails": ", ".join(s.email for s in r.sub.submitters),
            "score": r.score, "max_score": r.max_score, "gradescope": r.sub.gradescope_score,
            "differs": r.differs, "costs": [{"id": f, "points": p} for f, p in r.costs],
            "lost": sum(p for _f, p in r.costs), "run_key": r.extra.get("run_key", ""),
            "seconds": r.graded.seconds if r.graded else None, "status": r.status, "page": r.page,
            "rung": RUNG_NAMES.get(r.first_rung, ""), "rung_key": r.first_rung, "failed": r.failed,
            "bin": _share_bin(r, BINS) if r.score is not None and r.max_score else "", "need": need}


def by_need(rows: list[Row]) -> list[Row]:
    """Failed gradings first, then the lowest scores: the students who need help."""
    return sorted(rows, key=lambda r: r.need)


def overview(rows: list[Row], title: str, near: dict[str, Any] | None = None) -> dict[str, Any]:
    statuses = Counter(r.status for r in rows)
    rungs = Counter(r.first_rung for r in rows if r.first_rung)
    return {"title": title, "count": len(rows), "statuses": sorted(statuses.items()),
            "failed": sum(r.failed for r in rows),
            "timeouts": statuses.get("timeout", 0), "histogram": histogram(rows),
            "findings": finding_chart(rows), "clusters": clusters(rows),
            "rungs": [{"rung": RUNG_NAMES[k], "key": k, "count": rungs[k]} for k in RUNG_ORDER if rungs.get(k)],
            "rows": [_table_row(r, i) for i, r in enumerate(by_need(rows), 1)],
            "differs": sum(r.differs for r in rows), "near": near}


def _maps(t: dict) -> list[str]:
    """The test's block maps as figures (inline SVG, legend and notes as text), from
    the map data its results entry carries (decoded field by field; every text
    escaped when drawn)."""
    data = (t.get("extra_data") or {}).get("block_maps") if isinstance(t.get("extra_data"), dict) else None
    maps = [blockmaps.decode(d) for d in data[:4]] if isinstance(data, list) else []
    return [blockmaps.figure(m, "Drawn from the map above (the student saw it as text):") for m in maps
            if m is not None]


def _student_tests(doc: dict) -> tuple[list[dict], list[dict]]:
    shown, staff = [], []
    for t in doc.get("tests", []):
        entry = {"number": str(t.get("number", "")), "name": str(t.get("name", "")),
                 "score": t.get("score"), "max_score": t.get("max_score"),
                 "passed": t.get("status") == "passed", "output": str(t.get("output", "")),
                 "visibility": t.get("visibility", "visible"), "maps": _maps(t)}
        (staff if entry["visibility"] == "hidden" else shown).append(entry)
    return shown, staff


TAIL_LINES = 20     # lines of a failed grading's output shown as its reason


def _tail(text: str, lines: int = TAIL_LINES) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def failure(r: Row) -> dict[str, str] | None:
    """Why a grading gave no usable score, in words, with the last lines of what the
    grader wrote (its errors and progress, else its output: ``stream`` says which);
    None for a grading that worked."""
    g = r.graded
    if not r.failed:
        return None
    if g is None:
        return {"reason": "Not graded: no grading of this submission is stored (the batch was stopped "
                          "before it, or it was added to the export since). Run review again to grade it.",
                "tail": "", "from": "", "stream": ""}
    if g.status == "timeout":
        limit = f" (the limit was {g.timeout_s:g} s: review --timeout)" if g.timeout_s else ""
        reason = f"Timed out: the grading was stopped after {g.seconds:g} s{limit}."
    elif g.status == "crashed":
        reason = f"Crashed: the grading process exited with status {g.returncode} after {g.seconds:g} s."
    else:
        reason = ("Autograder error: the grader could not grade this submission; the test marked "
                  "autograder-error below says why." if r.autograder_error else
                  "No score: the grading finished without a usable results.json.")
    tail = _tail(g.stderr) or _tail(g.stdout)
    stream = "stderr" if g.stderr.strip() else "stdout" if tail else ""
    said = {"stderr": "errors and progress (stderr)", "stdout": "output (stdout)"}.get(stream, "")
    if not tail:
        reason += " It wrote nothing before it ended."
    return {"reason": reason, "tail": tail, "from": said, "stream": stream}


def reproduce(r: Row, slug: str, assignments: Path | None) -> str:
    """The command that replays this grading, on the submission's own folder (the
    export's, unpacked beside the site for a zip): same inputs, same run key."""
    key = r.extra.get("run_key")
    if not isinstance(key, int) or isinstance(key, bool):
        key = r.graded.run_key if r.graded is not None else None   # a failed grading: the key review drew
    if not isinstance(key, int) or isinstance(key, bool):
        return ""
    where = f" --assignments {shlex.quote(str(assignments.resolve()))}" if assignments is not None else ""
    return (f"pallas-autograder grade {shlex.quote(str(r.sub.folder.resolve()))} -a {shlex.quote(slug)}"
            f"{where} --run-key {key}")


def _anchors(tests: list[dict]) -> list[str]:
    """The tests that get a section id (``test-N``): those numbered once on the page,
    with a number as the grader writes them (1.2, P5)."""
    seen = Counter(t["number"] for t in tests)
    return [n for n, k in seen.items() if k == 1 and re.fullmatch(testlinks.NUMBER, n)]


def _streams(g: Graded | None, why: dict[str, str] | None) -> dict[str, str]:
    """The grader's stdout and stderr for the staff part, each line shown once: the
    last lines a failed grading's reason already quotes are left out here (only what
    came before them stays, said as such)."""
    out = {"stdout": g.stdout if g else "", "stderr": g.stderr if g else "", "earlier": ""}
    quoted = why["stream"] if why else ""
    if quoted:
        lines = out[quoted].rstrip().splitlines()
        out[quoted] = "\n".join(lines[:-TAIL_LINES]) if len(lines) > TAIL_LINES else ""
        out["earlier"] = quoted
    return out


def page_data(r: Row, slug: str, assignments: Path | None = None) -> dict[str, Any]:
    # A grading that did not finish left the grader's placeholder: no student saw it, and
    # it says nothing this page's reason does not (only a finished grading's results show).
    finished = r.graded is not None and r.graded.status == "graded"
    doc = (r.graded.results if finished else None) or {}
    shown, staff = _student_tests(doc)
    why = failure(r)
    return {"row": _table_row(r), "summary": str(doc.get("output", "")), "tests": shown,
            "anchors": _anchors(shown + staff),
            "staff_tests": staff, **_streams(r.graded, why), "extra": r.extra,
            "staff_report": r.graded.staff if r.graded else "", "failure": why,
            "command": reproduce(r, slug, assignments),
            "submitters": [{"name": s.name, "email": s.email, "sid": s.sid} for s in r.sub.submitters]}


def write(rows: list[Row], out: Path, title: str, slug: str, threshold: float | None = None,
          assignments: Path | None = None) -> list[Path]:
    """The whole site (``threshold``: the near-duplicate pairs' score; None: as the site had it;
    ``assignments``: the folder of assignment folders the gradings read, named in each
    page's reproduce command)."""
    env = _env()
    (out / "s").mkdir(parents=True, exist_ok=True)
    threshold = threshold_of(out, threshold)
    (out / OPTIONS).write_text(json.dumps({"similarity_threshold": threshold}), encoding="utf-8")
    near = near_duplicates(rows, threshold)
    written = [out / "index.html"]
    (out / "index.html").write_text(env.get_template("index.html.j2").render(site=overview(rows, title, near)),
                                    encoding="utf-8")
    for r in rows:
        path = out / r.page
        page = env.get_template("submission.html.j2").render(p=page_data(r, slug, assignments), title=title)
        path.write_text(page, encoding="utf-8")
        written.append(path)
    written += write_pairs(env, near, out, title)
    written += write_csv(rows, out)
    return written


def write_pairs(env: jinja2.Environment, near: dict[str, Any], out: Path, title: str) -> list[Path]:
    """pairs.html and one page per listed row (pages of an earlier, longer list removed)."""
    (out / "p").mkdir(exist_ok=True)
    for old in (out / "p").glob("*.html"):
        old.unlink()
    (out / "pairs.html").write_text(env.get_template("pairs.html.j2").render(near=near, title=title),
                                    encoding="utf-8")
    written = [out / "pairs.html"]
    for entry in near["rows"]:
        path = out / entry["page"]
        path.write_text(env.get_template("pair.html.j2").render(e=pair_page(entry), near=near, title=title),
                        encoding="utf-8")
        written.append(path)
    return written


def write_csv(rows: list[Row], out: Path) -> list[Path]:
    grades, findings = out / "grades.csv", out / "findings.csv"
    with open(grades, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["name", "email", "sid", "submission_id", "score", "max_score", "gradescope_score",
                    "status"])
        for r in rows:
            for s in r.sub.submitters or (None,):
                w.writerow([_text(s.name) if s else "", _text(s.email) if s else "", _text(s.sid) if s else "",
                            _text(r.sub.id),
                            _cell(r.score), _cell(r.max_score), _cell(r.sub.gradescope_score), r.status])
    with open(findings, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["submission_id", "test", "test_name", "finding", "rung", "points_lost"])
        for r in rows:
            for lost in r.lost:
                w.writerow([_text(r.sub.id), lost.number, _text(lost.name), lost.finding, lost.rung,
                            f"{lost.points:g}"])
    return [grades, findings]


def _text(v: str) -> str:
    """A cell a spreadsheet will not run as a formula (names come from the roster)."""
    return "'" + v if v[:1] in ("=", "+", "-", "@", "\t", "\r") else v


def _cell(v: float | None) -> str:
    return "" if v is None else f"{v:g}"
