"""Feedback rendering: findings and scored tests -> text, Markdown or HTML.

Renderers never check anything; they turn a report into plain data (dicts,
lists, strings) and hand it to jinja2 templates with StrictUndefined, so a
missing field fails loudly instead of printing nothing. Imports no JAX.
"""
from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from .. import findings
from ..findings import RUNGS, Finding, fix_line
from ..grading.judge import figures, instructor
from ..grading.judge.problems import Problem, key_of, seen_as_main, summarize, ties
from ..grading.judge.scoring import TestResult, blocking_test, symptom_of
from ..grading.probes import TERMS
from ..grading.run.plan import Run
from ..speed import grade as speed_grade
from . import blockmaps, escaping, evidence, fixes, repro
from .glossary import legend
from .maps import problem_map, shows as _shows
from .results_format import speed_line, speed_tests

FORMATS = ("text", "md", "html")
TEMPLATES = Path(__file__).resolve().parents[1] / "templates"

# What a hidden test may show: no shapes, no seeds, no expected values, no raw
# error text (which can quote shapes).
_HIDDEN_SAFE = {"problem", "mismatch_text", "nonfinite", "relative_to_output", "type",
                "frames", "phase", "limit_s", "memory_mb", "disk_mb", "exit", "not_run", "rule",
                "reason", "rerun_rung"}


_STATES = {"passed": "passed", "failed": "failed", "not-run": "not run in this grading"}


def wrap(text: str, width: int = 79, indent: str = "") -> str:
    """Each line of ``text`` filled to ``width`` columns, continuation lines indented
    by ``indent`` (counted in the width: nothing passes column ``width``); words
    longer than a line (a path, a command) are kept whole."""
    return "\n".join(textwrap.fill(line, width, subsequent_indent=indent, break_long_words=False,
                                   break_on_hyphens=False) or line for line in str(text).split("\n"))


@lru_cache(maxsize=None)
def _env(fmt: str) -> jinja2.Environment:
    env = jinja2.Environment(
        # A finding's explanation lives beside its catalogue entry; templates include it as "findings/<id>.j2".
        loader=jinja2.ChoiceLoader([jinja2.FileSystemLoader(str(TEMPLATES)), jinja2.PrefixLoader(
            {"findings": jinja2.FileSystemLoader(str(findings.TEMPLATES))})]), undefined=jinja2.StrictUndefined,
        autoescape=(fmt == "html"), trim_blocks=True, lstrip_blocks=True,
        keep_trailing_newline=False, finalize=escaping.visible)
    env.globals["fmt"] = fmt
    env.globals["rungs"] = RUNGS
    env.globals["chip_line"] = lambda fid: findings.CATALOGUE[fid].chip_line()   # a ladder's "real TPU" line
    # Block maps as inline SVG: only in the self-contained page (``page.j2`` sets it).
    # Gradescope's html output is sanitized by rules it does not publish, so a
    # results.json gets the text map in every format (see docs/guides/findings.md, "Block maps").
    env.globals["inline_svg"] = False
    env.filters.update(wrap=wrap, plain=escaping.plain, md_inline=escaping.md_inline, md_line=escaping.md_line,
                       md_fence=escaping.md_fence, num=figures.num, pct=figures.pct,
                       points=figures.points)
    return env


class Withheld(jinja2.Undefined):
    """A fact a secret case's finding has but does not show. To a template it is
    undefined (``is defined`` is false, so guarded parts are left out, and it is
    false), and wherever a template uses it unguarded (prints, joins, loops,
    indexes, calls a method, compares) it absorbs the use and prints one text
    saying it is withheld: never a crash, never the value."""
    TEXT = "(not shown: a secret case)"

    def __str__(self) -> str:
        return self.TEXT

    def __iter__(self):
        return iter((self,))

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return self

    def __getitem__(self, key):
        return self

    def __call__(self, *args, **kwargs):
        return self

    def __len__(self) -> int:
        return 1

    def __lt__(self, other) -> bool:
        return False

    __le__ = __gt__ = __ge__ = __lt__


class Redacted(dict):
    """A secret case's facts: the safe ones, and each other fact the finding has
    as ``Withheld``. A fact the finding never had still fails the template
    (StrictUndefined): a template bug is not hidden by a secret case."""

    def __init__(self, safe: dict, withheld: set[str]):
        super().__init__(safe)
        self.withheld = frozenset(withheld)

    def __missing__(self, key: str):
        if key in self.withheld:
            return Withheld(name=key)
        raise KeyError(key)


@dataclass(frozen=True)
class Context:
    """What a finding's text is filled from beyond the finding: the assignment (its
    numerics hint, its names of dimensions), where the student's pallas_calls are,
    and how the student starts the grader (the reproduce command)."""
    assignment: Any = None
    sources: Any = None                                 # grading.identity.sources.Sources
    how: repro.Invocation = repro.KIT
    related: tuple = ()                                 # the grading's findings (a race beside a DMA bug)
    problem_fixes: dict = field(default_factory=dict)   # problem key -> its fixes.Fix
    tied: dict = field(default_factory=dict)            # a finding -> the root cause the grader tied it to
    tests: tuple = ()                                   # the scored tests (a check a test kept from running)
    numbers: dict = field(default_factory=dict)         # a check's name -> its test's number


def _finding_view(f: Finding, visible: bool, ctx: Context | None = None) -> dict[str, Any]:
    facts = f.facts()
    if "mismatches" in facts and "total" in facts:
        share = facts["mismatches"] / max(facts["total"], 1)
        facts["mismatch_text"] = (f"{facts['mismatches']} of {facts['total']}" if visible
                                  else f"{share:.1%} of the outputs")
    if not visible:
        facts = Redacted({k: v for k, v in facts.items() if k in _HIDDEN_SAFE}, set(facts) - _HIDDEN_SAFE)
        message = f.kind.hidden_message(facts.get("problem", ""))
    else:
        message = f.message
    ctx = ctx or Context()
    fix = fixes.fix(f, ctx.assignment, visible=visible, sources=ctx.sources, related=ctx.related)
    seen = evidence.seen(f, ctx.sources, ctx.related, visible)
    return {"id": f.id, "title": f.kind.title, "summary": f.kind.summary, "rung": f.rung,
            "seen": seen[0] if seen else "", "chip_line": f.kind.chip_line(seen[0] if seen else ""),
            "rung_label": RUNGS[f.rung], "message": message, "facts": facts, "visible": visible,
            "check": f.check, "map": None, "map_note": "", "fix": fix.text, "fix_line": fix_line(f),
            **_fix_view(fix)}


def _fix_view(fix: fixes.Fix) -> dict[str, Any]:
    """The fix in this finding's own terms (its template's general "Fix:" then stays
    out), where to make it, and the line that holds the fault, quoted as written
    (a file's line is no secret): then the fix needs no place of its own."""
    at = {"where": fix.at.where, "text": fix.at.text} if fix.at is not None and fix.at.text else None
    return {"fix_here": (fix.what if at else fix.text) if fix.specific else "",
            "where": "" if at else fix.where, "at": at}


def _shown_run(t: TestResult, plan) -> Run | None:
    """The run a test's details come from: a correctness test's own run; for a
    probe check, the run its finding was seen on (a stress input's, say)."""
    if t.probe is None:
        return t.run
    if t.finding is not None and t.finding.run is not None:
        return plan.runs[t.finding.run]
    return None


def _inputs_text(assignment, case) -> str:
    """Each input's dtype and shape, and its scale where it is not the usual one
    (a case that scales its inputs to provoke an overflow says so here)."""
    scale = dict(case.scale)

    def scaled(i) -> str:
        factor = float(scale.get(i.name, i.scale))
        return f" scaled by {factor:g}" if factor != 1.0 else ""
    return ", ".join(
        f"{i.name}: {assignment.dtype_of(i.dtype, case)}{list(assignment.shape(i.shape, case))}{scaled(i)}"
        if i.kind == "array" else f"{i.name} = {dict(case.params)[i.name]!r}"
        for i in assignment.inputs)


def _problem_line(p: Problem, f: Finding | None = None) -> dict[str, Any]:
    """A problem as a line names it (``f``: the finding a pointer stands for; its
    message is said again only where it differs from the one explained)."""
    return {"number": p.number, "id": p.id, "title": p.title, "explained_in": p.explained_in,
            "same": f is not None and f == p.finding}


def _placement(t: TestResult, problems: dict, ctx: Context, maps: dict) -> dict[str, Any]:
    """Which findings this test explains in full, which it only points to, and
    which are its own bug seen another way (one note line each, never a ladder or a
    fix of their own): each problem is explained once, where the student first
    meets it (with its block map, when it has one)."""
    here, pointers, notes, keys, noted = [], [], [], set(), set()
    for i, f in enumerate((t.finding, *t.others) if t.finding else t.others):
        k = key_of(f)
        if i and seen_as_main(t, f, ctx.tied):
            # (One note per check and kind: two findings of one check tied to different bugs read the same.)
            if k != key_of(t.finding) and k not in keys and (f.check, f.id) not in noted \
                    and not symptom_of(t.finding, f):
                keys.add(k)
                noted.add((f.check, f.id))
                notes.append(_note(f, ctx))
            continue
        k = key_of(ctx.tied[f]) if i and f in ctx.tied else k     # another view of another problem
        blocker = blocking_test(f, list(ctx.tests)) if f.problem == "check-not-run" else None
        if blocker is not None and blocker.finding is not None:
            k = key_of(blocker.finding)       # a check its case's failing test kept from running: that problem
        if k in keys:
            continue
        keys.add(k)
        p = problems.get(k)
        if p is None or p.explained_in == t.number:
            here.append((i == 0, f))
        else:
            pointers.append((i == 0, p))
    main_here = bool(here) and here[0][0]
    return {
        "explained_here": main_here,
        # (A test gated by a failed check carries that check's finding: its message, said once.)
        "points_to": next((_problem_line(p, t.finding if t.gated_by else None) for first, p in pointers if first),
                          None),
        "problem": _problem_line(problems[key_of(t.finding)]) if t.finding and key_of(t.finding) in problems
        else None,
        "also_explained": [_problem_fix(_with_map(_finding_view(f, _shows(f, ctx.assignment), ctx), f, t, problems,
                                                  maps), f, ctx)
                           for first, f in here if not first],
        "also": [_problem_line(p) for first, p in pointers if not first],
        "notes": notes if main_here else [],
        "own": _own_symptom(t, ctx) if main_here else "",
    }


def _own_symptom(t: TestResult, ctx: Context) -> str:
    """What a correctness test saw itself, where the problem it explains was found by
    another run (a probe's, another case's): "wrong result [wrong-result]: ...", else ""."""
    f = t.finding
    if t.probe is not None or f is None or (f.check == "correctness" and f.case == t.case.name):
        return ""
    own = next((o for o in t.others if o.check == "correctness" and o.case == t.case.name and o.rung == t.rung
                and o.id != f.id), None)
    if own is None:
        return ""
    return f"{own.kind.title.lower()} [{own.id}]: {_finding_view(own, _shows(own, ctx.assignment), ctx)['message']}"


def _note(f: Finding, ctx: Context) -> str:
    """One line: a check that sees this test's bug too, as another finding."""
    shown = _finding_view(f, _shows(f, ctx.assignment), ctx)["message"].rstrip(".")
    check = ctx.numbers.get(f.check)
    who = f"check {check} ({f.check.replace('-', ' ')})" if check else f"the {f.check.replace('-', ' ')} check"
    said = "" if shown.lower().startswith(f.kind.title.lower()) else f": {shown}"
    return f"{who} sees this bug too, as {f.kind.title.lower()} [{f.id}]{said}"


def _with_map(view: dict, f: Finding, t: TestResult, problems: dict, maps: dict) -> dict:
    """The problem's map goes where the problem is explained in full, and nowhere else."""
    p = problems.get(key_of(f))
    if p is not None and p.explained_in == t.number and p.key in maps:
        view["map"], view["map_note"] = maps[p.key]
    return view


# How a test reads, beside Gradescope's green or red: a check that keeps its points
# because its bug was charged elsewhere, or that never ran, says so.
BADGES = {"pass": "PASS", "fail": "FAIL", "same": "SAME BUG", "not-run": "NOT RUN"}


def test_state(t: TestResult) -> str:
    """pass, fail, same (found a bug already charged in another test: not charged
    again) or not-run (could not run: stopped by a bug charged elsewhere, or by
    the grader's own limits; not charged)."""
    if not t.passed:
        return "fail"
    if t.kept_unrun:
        return "not-run"
    return "same" if t.finding is not None and t.charged_in else "pass"


def test_view(t: TestResult, plan, uploaded_as: str | None, problems: dict | None = None,
              maps: dict | None = None, ctx: Context | None = None) -> dict[str, Any]:
    assignment = plan.assignment
    ctx = ctx or Context(assignment)
    run = _shown_run(t, plan)
    case = run.draw.case if run is not None and not run.draw.abstract else t.case
    visible = case.visible if t.probe is not None else t.case.visible
    f = t.finding
    # A secret case's test never shows a reproduction, whichever case its finding came from.
    shows = (f is not None and f.case is not None and _shows(f, assignment)
             and (t.probe is not None or t.case.visible))
    state = test_state(t)
    # The grader's --case/--rung replays correctness runs only: a probe's
    # failure is reproduced by its snippet (its interpreter parameters).
    replayable = shows and t.probe is None and t.rung in ("generic", "tpu-interpret") and not t.gated_by
    view = {
        "number": t.number, "name": t.name, "passed": t.passed, "score": t.score,
        "max_score": t.max_score, "counted": t.counted, "rung": t.rung, "rung_label": RUNGS[t.rung],
        "state": state, "badge": BADGES[state],
        "visible": visible, "shown_to_student": t.visibility,
        "case": {"name": case.name if visible else None, "dtype": case.dtype if visible else None,
                 "seed": (run.draw.seed if run is not None else [case.seed]) if visible else None,
                 "inputs": _inputs_text(assignment, case) if visible else None},
        "finding": _finding_view(f, _shows(f, assignment), ctx) if f else None,
        "wide": bool(f and f.case is None),
        "ladder": [{"rung": r, "state": _STATES[st]} for r, st in t.ladder],
        # A check that keeps its points says so in one line: no evidence, snippet or command.
        # (A test gated by a check that failed (work outside the kernel) is not reproduced by its
        # run: its output is right; the check's own explanation says what to change.)
        "snippet": _snippet(t, run, plan) if shows and state == "fail" and not t.gated_by else None,
        "command": (_command(t, uploaded_as, plan.run_key, ctx) if replayable else None),
        # (Tied by a secret case's evidence: no command, and the test says why.)
        "command_withheld": (f is not None and f.case is not None and t.case.visible and t.probe is None
                             and t.rung in ("generic", "tpu-interpret") and not t.gated_by and state == "fail"
                             and repro.replay_of(assignment, t.case, t.rung, f) is None),
        "probe": t.probe,
        "charged_in": t.charged_in,
        # Kept from running by the case's own failing test (not settled by a static fact).
        "blocked": any(o.problem == "check-not-run" for o in t.others),
        "charged_problem": None,
        "gated_by": t.gated_by,
        "note": t.note,
    }
    view.update(_placement(t, problems or {}, ctx, maps or {}))
    # A check that passed beside a problem of the kind it looks for, found by other evidence.
    kinds = TERMS[t.probe].ids if t.probe and state == "pass" else ()
    view["kin"] = next((_problem_line(p) for p in (problems or {}).values() if p.id in kinds), None)
    if f is not None and view["finding"] is not None and view["explained_here"]:
        _problem_fix(_with_map(view["finding"], f, t, problems or {}, maps or {}), f, ctx)
    return view


def _problem_fix(view: dict, f: Finding, ctx: Context) -> dict:
    """Where a problem is explained (a test's own finding or one also on it), the
    problem's one fix: the same words the problem list gives."""
    fix = ctx.problem_fixes.get(key_of(f))
    if fix is not None and (fix.specific or fix.at is not None):
        view.update(_fix_view(fix))
    return view


def _command(t: TestResult, uploaded_as: str | None, run_key: int, ctx: Context) -> str | None:
    """The grader's command that replays this test as the whole grading saw it: with
    the evidence that tied it to its problem (``repro.replay_of``), else none."""
    replay = repro.replay_of(ctx.assignment, t.case, t.rung, t.finding)
    return ctx.how.command(ctx.assignment, replay, uploaded_as, run_key) if replay is not None else None


def _snippet(t: TestResult, run: Run | None, plan) -> str | None:
    """A plain-JAX reproduction: the test's own case and seed; a probe check's
    run with its interpreter parameters."""
    if run is None or run.draw.abstract:
        run = plan.test_run(t.finding.case, "tpu-interpret") or plan.test_run(t.finding.case, plan.rungs[0])
    if run is None:
        return None
    if t.finding.id == "compile-reject":
        return repro.lowering_snippet(plan.assignment, run.draw.case, run.draw.seed)
    facts = t.finding.facts()
    params = facts.get("interpret_params") or run.params_dict
    rung = run.rung if run.rung in ("generic", "tpu-interpret") else "tpu-interpret"
    hung = facts.get("limit_s") if t.finding.problem in ("hang", "timeout") and facts.get("phase") != "trace" \
        and isinstance(facts.get("limit_s"), (int, float)) else None
    return repro.snippet(plan.assignment, run.draw.case, rung, params, run.draw.seed,
                         run.stress.tolerance if run.stress is not None else None, hung)


def problem_fix(p: Problem, findings, ctx: Context) -> fixes.Fix:
    """A problem's fix line from every finding of it (the static scan's first: it
    knows the whole grid), in the student's terms where its case may be shown."""
    a = ctx.assignment
    same = [p.finding] + [f for f in findings if key_of(f) == p.key and f is not p.finding]
    return fixes.best(same, a, shows=lambda f: _shows(f, a), sources=ctx.sources, related=ctx.related)


def problems_view(problems: tuple[Problem, ...], assignment, ctx: Context | None = None,
                  findings=()) -> list[dict[str, Any]]:
    ctx = ctx or Context(assignment)
    out = []
    for p in problems:
        fv = _finding_view(p.finding, _shows(p.finding, assignment), ctx)
        out.append({"number": p.number, "id": p.id, "title": p.title, "fix": problem_fix(p, findings, ctx).text,
                    "points": p.points, "cost": list(p.cost), "seen": list(p.seen),
                    "explained_in": p.explained_in, "message": fv["message"]})
    return out


def listing(report) -> dict[str, int]:
    """The tests results.json lists as the student sees them now, counted the way
    Gradescope shows them (failed in red, passed in green) and, among the green,
    what each is: clean, the same bug not charged again, not run (a replay: of
    the tests it counts, ``replay_view``)."""
    entries = [(t.visibility, t.passed, test_state(t)) for t in report.tests if t.counted]
    entries += [(e["visibility"], e["passed"], e["state"]) for e in speed_tests(report)]
    suite = report.custom
    entries += [(c.visibility, c.passed, "pass" if c.passed else "fail")
                for c in (suite.checks if suite else ())]
    shown = [(passed, state) for visibility, passed, state in entries if visibility == "visible"]
    green = [state for passed, state in shown if passed]
    return {"count": len(shown), "failed": len(shown) - len(green), "passed": len(green),
            "clean": green.count("pass"), "same": green.count("same"), "not_run": green.count("not-run"),
            "later": len(entries) - len(shown)}


def _charged_problem(t: TestResult, tests, keyed: dict) -> dict[str, Any] | None:
    """The problem a check that keeps its points found again (or was stopped by):
    the one its bug was charged under, in the test it names."""
    charged = next((x for x in tests if x.number == t.charged_in and x.finding is not None), None)
    p = keyed.get(key_of(charged.finding)) if charged is not None else None
    return _problem_line(p) if p is not None else None


def report_view(report, how: repro.Invocation = repro.KIT) -> dict[str, Any]:
    """``how``: how the student starts the grader where they read this (the kit's
    command for Gradescope's feedback; a local grading's own invocation)."""
    a = report.assignment
    problems = summarize(report.tests, lambda f: _shows(f, a))
    keyed = {p.key: p for p in problems}
    ctx = Context(a, report.sources, how, report.findings, tied=ties(list(report.tests)), tests=report.tests,
                  numbers={t.probe: t.number for t in report.tests if t.probe})
    # The test that explains a problem gives the problem's own fix line.
    ctx = replace(ctx, problem_fixes={p.key: problem_fix(p, report.findings, ctx) for p in problems})
    maps: dict = {p.key: problem_map(p, report) for p in problems if p.id in blockmaps.SPATIAL}
    # A check that keeps its points names the ID the bug was charged under there.
    charged_ids = {t.number: t.finding.id for t in report.tests if t.finding is not None}
    speed = speed_grade.view(report.speed) if report.speed and report.speed.visibility == "visible" else None
    checks = custom_views(report, problems)
    return {
        "title": a.title, "slug": a.slug, "score": report.score, "max_score": report.max_score,
        "uploaded_as": report.uploaded_as, "seconds": round(report.seconds, 1),
        # A note already says the file was graded under the handout's name.
        "renamed": bool(report.uploaded_as) and any(f"Graded {report.uploaded_as} as" in n for n in report.notes),
        "jax_version": report.jax_version,
        "problems": problems_view(problems, a, ctx, report.findings),
        "wide": [_finding_view(f, True, ctx) for f in report.wide_findings],
        "tests": [{**test_view(t, report.plan, report.uploaded_as, keyed, maps, ctx),
                   "charged_as": charged_ids.get(t.charged_in),
                   "charged_problem": _charged_problem(t, report.tests, keyed)} for t in report.tests],
        "listing": listing(report),
        "replay": report.replay_tally(),
        "secret_cases": sum(1 for c in report.plan.cases if not c.visible),
        "student_output": report.student_output,   # already a capped tail (sandbox.Tail)
        "notes": list(report.notes),
        "glossary": legend([t.number for t in report.tests] + [e["number"] for e in speed_tests(report)]
                             + (report.custom.numbers() if report.custom else [])),
        # The instructor's checks: every one (results.json), and those a student sees now.
        "custom_checks": checks,
        "custom": [c for c in checks if c["visibility"] == "visible"],
        "speed": speed,
        "speed_line": speed_line(report.speed) if speed else "",
        "correct": all(t.passed for t in report.tests if t.probe is None),
    }


def custom_views(report, problems) -> list[dict[str, Any]]:
    """The instructor's checks, every one (results.json lists them), each failed
    subTest said once (``instructor.said_once``)."""
    suite = report.custom
    return [{"name": c.name, "number": number, "score": c.score, "max_score": c.max_score, "passed": c.passed,
             "output": c.output, "visibility": c.visibility,
             "failures": instructor.said_once(c.failures, report.tests, problems)}
            for c, number in zip(suite.checks, suite.numbers())] if suite else []


def render(template: str, fmt: str, **data: Any) -> str:
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}; got {fmt!r}")
    text = _env(fmt).get_template(template).render(**data)
    return re.sub(r"\n\s*\n(\s*\n)+", "\n\n", text).strip() + "\n"


def render_test(view: dict, fmt: str) -> str:
    return render("test.j2", fmt, test=view)


def render_summary(view: dict, fmt: str) -> str:
    return render("summary.j2", fmt, report=view)


def render_report(view: dict, fmt: str) -> str:
    """The whole report, for the terminal: summary, then every test. HTML is a
    self-contained page (styles and script inline: it opens from file://)."""
    if fmt == "html":
        return render("page.j2", fmt, report=view, inline_svg=True)
    return render("report.j2", fmt, report=view)
