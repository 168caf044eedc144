"""`review`: reading exports, the stored batch, the site and its CSVs (no JAX),
then a real class regraded through the CLI, resumed, on a local Dask cluster,
and its site in a real browser (jax)."""
import csv
import html
import io
import json
import shlex
import shutil
import subprocess
import textwrap
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from accessibility import audit
from conftest import REPO, corpus, run_cli, trimmed_add
from lookalikes.variants import variant
from test_near_duplicates import program_one, program_one_disguised, program_two

from autograder.review import ExportError, batch, read_submissions, site
from autograder.review.export import Submission, Submitter
from autograder.review.progress import Progress

METADATA = textwrap.dedent('''\
    submission_101:
      :submitters:
      - :name: Ada Lovelace
        :sid: '1001'
        :email: ada@example.edu
      :created_at: 2026-11-30 10:00:00.000000000 -08:00
      :score: 2.0
    submission_102:
      :submitters:
      - :name: Alan Turing
        :sid: '1002'
        :email: alan@example.edu
      - :name: "=HYPERLINK(\\"http://x\\")"
        :sid: '1006'
        :email: eve@example.edu
      :score: 2.0
    submission_103:
      :submitters:
      - :name: Grace Hopper
        :sid: '1003'
        :email: grace@example.edu
      :score: 2.0
    submission_104:
      :submitters:
      - :name: "<script>window.hacked = 1</script>"
        :sid: '1004'
        :email: edsger@example.edu
      :score: 1.0
    submission_105:
      :submitters:
      - :name: Barbara Liskov
        :sid: '1005'
        :email: barbara@example.edu
    ''')


def _renamed_solution() -> str:
    """The add solution disguised: every name changed, independent lines swapped,
    unused lines added. The same kernel structure."""
    return variant((REPO / "solutions" / "add.py").read_text(), "rename", "reorder", "pad", keep="add")


def make_export(folder: Path) -> Path:
    """A Gradescope export: metadata and five submission folders."""
    files = {"submission_101": (REPO / "solutions" / "add.py").read_text(),
             "submission_102": _renamed_solution(),
             "submission_103": (corpus("add") / "wrong_formula.py").read_text(),
             "submission_104": (corpus("add") / "grid_one_step_too_long.py").read_text(),
             "submission_105": (corpus("add") / "syntax_error.py").read_text()}
    for name, text in files.items():
        (folder / name).mkdir(parents=True)
        (folder / name / "add.py").write_text(text)
    (folder / "submission_metadata.yml").write_text(METADATA)
    return folder


# --- without JAX ----------------------------------------------------------------------------

def test_a_gradescope_export_is_read_with_its_ruby_symbol_keys(tmp_path):
    subs = read_submissions(make_export(tmp_path / "export"), tmp_path / "unpacked")
    assert [s.id for s in subs] == [f"submission_10{i}" for i in range(1, 6)]
    assert subs[0].submitters == (Submitter("Ada Lovelace", "ada@example.edu", "1001"),)
    assert subs[0].created_at.startswith("2026-11-30") and subs[0].gradescope_score == 2.0
    assert [s.name for s in subs[1].submitters] == ["Alan Turing", '=HYPERLINK("http://x")']
    assert subs[4].gradescope_score is None


def test_an_export_zip_with_its_top_folder_and_a_plain_folder_of_folders(tmp_path):
    export = make_export(tmp_path / "assignment_7_export")
    zpath = tmp_path / "export.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        for p in export.rglob("*"):
            zf.write(p, p.relative_to(tmp_path))
    subs = read_submissions(zpath, tmp_path / "unpacked")
    assert len(subs) == 5 and subs[2].submitters[0].name == "Grace Hopper"
    plain = tmp_path / "plain"
    for i in (1, 2):
        (plain / f"student{i}").mkdir(parents=True)
        (plain / f"student{i}" / "add.py").write_text("x = 1\n")
    assert [(s.id, s.submitters) for s in read_submissions(plain, tmp_path / "u2")] == \
        [("student1", ()), ("student2", ())]


def test_a_zip_member_outside_the_export_and_bad_metadata_are_refused(tmp_path):
    zpath = tmp_path / "evil.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        zf.writestr("../../escaped.py", "x = 1\n")
    with pytest.raises(ExportError, match="would be written outside the export"):
        read_submissions(zpath, tmp_path / "unpacked")
    assert not (tmp_path / "escaped.py").exists()
    bad = tmp_path / "bad"
    (bad / "submission_1").mkdir(parents=True)
    (bad / "submission_metadata.yml").write_text("- just\n- a list\n")
    with pytest.raises(ExportError, match="must map submission ids"):
        read_submissions(bad, tmp_path / "u")


def _graded(sid: str, score: float, tests: list[dict], fp: str = "", status: str = "graded") -> batch.Graded:
    doc = {"score": score, "output": "summary **bold** <b>raw</b>", "tests": tests,
           "extra_data": {"run_key": 42, "fingerprint": fp}}
    return batch.Graded(f"k{sid}", sid, status, 3.5, doc, "grader said hi", "Traceback: boom", 0)


def _test(number: str, score: float, max_score: float, finding: str = "", rung: str = "",
          visibility: str = "visible") -> dict:
    return {"number": number, "name": f"test {number}", "score": score, "max_score": max_score,
            "status": "passed" if score >= max_score else "failed", "tags": [finding] if finding else [],
            "output": f"output of {number}", "visibility": visibility,
            "extra_data": {"finding": finding, "rung": rung} if finding else {}}


def _rows(tmp_path):
    subs = [Submission(f"s{i}", tmp_path, (Submitter(name, f"{i}@x.edu", str(i)),), gs)
            for i, (name, gs) in enumerate([("Ann", 4.0), ("=cmd|' /C calc'!A0", 2.0), ("Cy", None),
                                            ("<img src=x onerror=alert(1)>", 4.0)])]
    graded = [_graded("s0", 4.0, [_test("1.1", 2, 2), _test("1.2", 2, 2)], "fpA"),
              _graded("s1", 1.0, [_test("1.1", 1, 2, "wrong-result", "generic"),
                                  _test("1.2", 0, 2, "out-of-bounds", "tpu-interpret"),
                                  _test("P1", 0, 1, "out-of-bounds", "static", "hidden")], "fpB"),
              None,
              _graded("s3", 4.0, [_test("1.1", 2, 2), _test("1.2", 2, 2)], "fpA")]
    return [site.row(s, g) for s, g in zip(subs, graded)]


def test_rows_know_every_finding_and_its_cost_the_first_rung_and_a_score_that_differs(tmp_path):
    rows = _rows(tmp_path)
    assert [r.status for r in rows] == ["graded", "graded", "not graded", "graded"]
    # Every finding with the points it cost (the hidden static check's included), costliest first.
    assert rows[1].costs == (("out-of-bounds", 3.0), ("wrong-result", 1.0)) and rows[0].costs == ()
    assert rows[1].first_rung == "static"
    assert [r.differs for r in rows] == [False, True, False, False]
    assert site.clusters(rows) == [{"fingerprint": "fpA", "size": 2, "members": [
        {"id": "s0", "names": "Ann", "page": "s/s0.html", "score": 4.0},
        {"id": "s3", "names": "<img src=x onerror=alert(1)>", "page": "s/s3.html", "score": 4.0}]}]
    assert [(f["id"], f["count"], f["points"]) for f in site.finding_chart(rows)] == [
        ("out-of-bounds", 1, 3.0), ("wrong-result", 1, 1.0)]
    # Full marks are a bar of their own, never hidden in the top range.
    hist = site.histogram(rows)
    assert [(b["key"], b["count"]) for b in hist["bars"] if b["count"]] == [("2", 1), ("full", 2)]
    assert [b["tick"] for b in hist["bars"]][-2:] == ["4.5", "5"] and hist["bars"][-2]["label"] == "4.5 to under 5"
    assert hist["bars"][-1]["label"] == "full marks (5)"


def _class(tmp_path) -> list:
    """_rows and three gradings that failed: timed out, crashed, and one whose grader
    wrote an autograder error."""
    rows = _rows(tmp_path)
    more = [("Dee", replace(_graded("s4", 0.0, []), status="timeout", seconds=70.4, timeout_s=70.0,
                            stderr="warming up\n" + "\n".join(f"line {i}" for i in range(30)))),
            ("Eve", replace(_graded("s5", 0.0, []), status="crashed", returncode=-9)),
            ("Fay", _graded("s6", 0.0, [dict(_test("1.1", 0, 2, "autograder-error"), visibility="visible")]))]
    folder = tmp_path / "export"
    for i, (name, g) in enumerate(more, 4):
        (folder / f"s{i}").mkdir(parents=True)
        rows.append(site.row(Submission(f"s{i}", folder / f"s{i}", (Submitter(name, f"{i}@x.edu", str(i)),)), g))
    return rows


def test_the_table_is_sorted_by_need_and_a_failed_grading_says_why(tmp_path):
    rows = _class(tmp_path)
    assert [r.status for r in rows[4:]] == ["timeout", "crashed", "autograder error"]
    assert [r.sub.names for r in site.by_need(rows)] == [
        "Cy", "Dee", "Eve", "Fay", "=cmd|' /C calc'!A0", "<img src=x onerror=alert(1)>", "Ann"]
    view = site.overview(rows, "Add")
    assert [r["need"] for r in view["rows"]] == list(range(1, 8)) and view["failed"] == 4
    timeout = site.failure(rows[4])
    assert timeout["reason"] == ("Timed out: the grading was stopped after 70.4 s "
                                 "(the limit was 70 s: review --timeout).")
    assert timeout["tail"].splitlines() == [f"line {i}" for i in range(10, 30)]     # the last 20 lines
    assert site.failure(rows[5])["reason"].startswith("Crashed: the grading process exited with status -9")
    assert site.failure(rows[6])["reason"].startswith("Autograder error:")
    assert site.failure(rows[2])["reason"].startswith("Not graded:") and site.failure(rows[0]) is None
    # The staff's command names the submission's real folder, quoted for a shell.
    command = site.reproduce(rows[4], "add", tmp_path / "my assignments")
    assert command == (f"pallas-autograder grade {tmp_path / 'export' / 's4'} -a add "
                       f"--assignments '{tmp_path / 'my assignments'}' --run-key 42")


def test_the_site_escapes_names_and_feedback_and_the_csv_escapes_formulas(tmp_path):
    rows = _rows(tmp_path)
    out = tmp_path / "site"
    written = site.write(rows, out, "Add", "add")
    assert {p.name for p in written} == {"index.html", "s0.html", "s1.html", "s2.html", "s3.html",
                                         "grades.csv", "findings.csv", "pairs.html"}
    index = (out / "index.html").read_text()
    assert "<img src=x" not in index and "&lt;img src=x onerror=alert(1)&gt;" in index
    page = (out / "s" / "s1.html").read_text()
    assert "<strong>bold</strong>" in page and "<b>raw</b>" not in page and "&lt;b&gt;raw&lt;/b&gt;" in page
    staff = page[page.index('id="staff"'):]
    assert "test P1" in staff and "test P1" not in page[:page.index('id="staff"')]
    assert f"pallas-autograder grade {tmp_path} -a add --run-key 42" in staff
    assert "Traceback: boom" in staff and "grader said hi" in staff and "&lt;s1" not in staff
    grades = list(csv.reader(io.StringIO((out / "grades.csv").read_text())))
    assert grades[0] == ["name", "email", "sid", "submission_id", "score", "max_score", "gradescope_score",
                         "status"]
    assert grades[2][0] == "'=cmd|' /C calc'!A0" and grades[3][4:] == ["", "", "", "not graded"]
    findings = list(csv.reader(io.StringIO((out / "findings.csv").read_text())))
    assert findings[1:] == [["s1", "1.1", "test 1.1", "wrong-result", "generic", "1"],
                            ["s1", "1.2", "test 1.2", "out-of-bounds", "tpu-interpret", "2"],
                            ["s1", "P1", "test P1", "out-of-bounds", "static", "1"]]


def test_a_failed_gradings_page_shows_each_line_the_grader_wrote_once(tmp_path):
    rows = _class(tmp_path)
    out = tmp_path / "site"
    site.write(rows, out, "Add", "add")
    # Timed out after 31 lines of stderr: the last 20 are the reason's; the staff part keeps
    # only the 11 before them, said as such (issue 45: the same line printed twice).
    page = (out / "s" / "s4.html").read_text()
    tail = html.unescape(page.split('<code id="failure-tail">')[1].split("</code>")[0])
    earlier = html.unescape(page.split('<code id="stderr">')[1].split("</code>")[0])
    assert tail.splitlines() == [f"line {i}" for i in range(10, 30)]
    assert earlier.splitlines() == ["warming up"] + [f"line {i}" for i in range(10)]
    assert "The grader&#39;s earlier errors and progress (its last lines are above)" in page
    # Crashed with one line: quoted once, under the reason; the staff part has no copy of it.
    crashed = (out / "s" / "s5.html").read_text()
    assert crashed.count("Traceback: boom") == 1 and 'id="stderr"' not in crashed
    assert "grader said hi" in crashed     # stdout, not what the reason quotes, is still shown
    # A grading that worked shows its streams whole.
    worked = (out / "s" / "s1.html").read_text()
    assert "The grader&#39;s errors and tracebacks" in worked and worked.count("Traceback: boom") == 1


def test_a_test_named_in_the_feedback_links_to_its_section(tmp_path):
    """The feedback is Gradescope's Markdown: on the TA's page, "test 1.2" (and each number
    of "tests 1.1, 1.2", and "check P1") links to that test's section; code, a number that
    is no test here, and the Markdown itself are left as they are."""
    tests = [_test("1.1", 0, 2, "wrong-result", "generic"), _test("1.2", 0, 2, "wrong-result", "tpu-interpret"),
             _test("P1", 1, 1, "", "", "hidden")]
    tests[1]["output"] = "Problem 1, Wrong result [wrong-result], explained under test 1.1: <b>x</b>.\n"
    tests[2]["output"] = ("Same bug, not charged again: which already cost points in test 1.1.\n\n"
                          "`test 1.2` and test 9.9\n")
    doc = {"score": 1.0, "output": "1. Wrong result: cost 4 points in tests 1.1, 1.2. Explained under test 1.1.\n"
                                   "note: check P1 sees it too.\n", "tests": tests, "extra_data": {"run_key": 1}}
    graded = batch.Graded("k", "s9", "graded", 1.0, doc)
    out = tmp_path / "site"
    site.write([site.row(Submission("s9", tmp_path), graded)], out, "Add", "add")
    page = (out / "s" / "s9.html").read_text()
    assert ('cost 4 points in tests <a href="#test-1.1">1.1</a>, <a href="#test-1.2">1.2</a>. '
            'Explained under <a href="#test-1.1">test 1.1</a>.') in page
    assert 'note: <a href="#test-P1">check P1</a> sees it too.' in page
    assert ('<p>Problem 1, Wrong result [wrong-result], explained under <a href="#test-1.1">test 1.1</a>: '
            '&lt;b&gt;x&lt;/b&gt;.</p>') in page
    assert 'which already cost points in <a href="#test-1.1">test 1.1</a>.' in page
    assert "<code>test 1.2</code> and test 9.9" in page
    assert [f'id="test-{n}"' in page for n in ("1.1", "1.2", "P1")] == [True] * 3
    assert 'href="#test-9.9"' not in page


def test_the_site_leads_to_the_students_who_need_help_for_everyone(tmp_path):
    """In Chromium: the table starts with who needs help; every overview count filters
    it; headers sort from the keyboard; charts say their counts; a failed grading's
    page says why; WCAG 2.2 AA (axe-core) and reflow at 320 px on the index and on
    submission pages (the pairs pages, and pages with block maps: _browse)."""
    from test_html import _chromium
    chromium = _chromium()
    sync_api = pytest.importorskip("playwright.sync_api", reason="the test extras (playwright) are not installed")
    out = tmp_path / "site"
    site.write(_class(tmp_path), out, "Add", "add")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((out / "index.html").as_uri())
        names = lambda: page.locator("#table tbody tr:visible td:nth-child(2)").all_inner_texts()  # noqa: E731

        def shows(expected: list[str]) -> None:
            """The table's visible names, once the click's filter has run (a filter link may
            apply on the hash change, after the click returns: a loaded machine showed it)."""
            sync_api.expect(page.locator("#table tbody tr:visible td:nth-child(2)")).to_have_text(expected)
        assert names() == ["Cy", "Dee", "Eve", "Fay", "=cmd|' /C calc'!A0", "<img src=x onerror=alert(1)>", "Ann"]
        # Counts are links that filter the table, and say what they filter.
        page.locator("#failed-card").click()
        shows(["Cy", "Dee", "Eve", "Fay"])
        assert page.locator("#filter-status").inner_text() == "Showing 4 of 7: gradings that failed."
        page.get_by_role("link", name="1 submission scored 1 to under 1.5").click()
        shows(["=cmd|' /C calc'!A0"])
        page.get_by_role("link", name="2 submissions scored full marks (5)").click()
        shows(["<img src=x onerror=alert(1)>", "Ann"])
        page.locator("#findings a", has_text="out-of-bounds").click()
        shows(["=cmd|' /C calc'!A0"])
        assert "3 pts lost" in page.locator("#findings").inner_text()
        page.locator("#rungs a", has_text="static analysis").click()
        shows(["=cmd|' /C calc'!A0"])
        page.locator(".card a", has_text="timeout").click()
        shows(["Dee"])
        page.locator("#clear-filter").click()
        shows(["Cy", "Dee", "Eve", "Fay", "=cmd|' /C calc'!A0", "<img src=x onerror=alert(1)>", "Ann"])
        assert page.locator("#filter-status").inner_text() == ""
        # Every finding with its cost, in the table.
        assert page.locator("#table tbody tr", has_text="=cmd").locator("ul.costs li").all_inner_texts() == [
            "out-of-bounds −3", "wrong-result −1"]
        # Sorting from the keyboard: the Score header's button, Enter, then Space.
        page.locator("#table th button", has_text="Score").focus()
        page.keyboard.press("Enter")
        assert page.locator("#table th", has_text="Score").get_attribute("aria-sort") == "ascending"
        page.keyboard.press(" ")
        assert set(names()[:2]) == {"<img src=x onerror=alert(1)>", "Ann"} and names()[-2:] == ["Cy", "Dee"]
        assert audit(page) == []
        # A timed-out grading's page: why, and the last lines of its errors.
        page.goto((out / "s" / "s4.html").as_uri())
        reason = page.locator("#reason").inner_text()
        assert "Timed out: the grading was stopped after 70.4 s (the limit was 70 s" in reason
        assert "line 29" in reason and "line 9\n" not in reason
        assert audit(page) == []
        page.goto((out / "index.html").as_uri() + "#filter:failed=1")    # a link from another page filters too
        shows(["Cy", "Dee", "Eve", "Fay"])
        # Pass and fail in words on a graded submission's page.
        page.goto((out / "s" / "s1.html").as_uri())
        assert page.locator("section.test.fail .verdict").all_inner_texts() == ["Failed", "Failed", "Failed"]
        assert audit(page) == []
        browser.close()
    assert errors == []


def test_near_duplicate_pairs_are_listed_escaped_with_the_programs_side_by_side(tmp_path):
    rows = _rows(tmp_path)
    programs = [program_one(), program_one_disguised(), None, program_two()]
    rows = [site.row(r.sub, replace(r.graded, programs={"speed:x": "{}", "check:small": json.dumps(doc)})
                     if r.graded and doc else r.graded) for r, doc in zip(rows, programs)]
    out = tmp_path / "site"
    (out / "p").mkdir(parents=True)
    (out / "p" / "9.html").write_text("a page of an earlier, longer list")
    site.write(rows, out, "Add", "add", threshold=0.3)
    assert sorted(p.name for p in (out / "p").iterdir()) == ["1.html", "2.html"]
    pairs = (out / "pairs.html").read_text()
    assert "never a verdict" in pairs and "common" in pairs and "0.30 are listed" in pairs
    # Ann and the one with a name made of markup share a program; Cy has none.
    assert "3 submissions compared (1 without" in " ".join(pairs.split())
    same, near = pairs.split('<tr class="same">')[1], pairs.split('<tr class="near">')[1]
    assert "Ann" in same and "=cmd" in same and "&lt;img src=x onerror=alert(1)&gt;" in near
    assert "<img src=x" not in pairs
    page = (out / "p" / "2.html").read_text()
    assert "<script>alert" not in page and "fmt=&#34;&lt;script&gt;alert(1)&lt;/script&gt;" in page
    # One operation changed (add for sub): its line and the one it feeds; the lines around stay.
    assert page.count('<tr class="changed">') == 1 and "<mark>sub</mark>" in page and "<mark>add</mark>" in page
    assert page.count('<tr class="same">') == 4 and "add_1 = add(cos_1, sin_1)" in page
    assert "sub_1 = sub(sin_1, cos_1)" in page
    # Rewritten without a threshold (as `merge` does): the site keeps the one it was made with.
    site.write(rows, out, "Add", "add")
    assert "0.30 are listed" in (out / "pairs.html").read_text()
    site.write(rows, out, "Add", "add", threshold=0.95)
    index = (out / "index.html").read_text()
    assert 'href="pairs.html"' in index and 'id="near-duplicates"' in index
    assert '<tr class="near">' not in (out / "pairs.html").read_text()


def test_stored_gradings_are_keyed_by_content_spec_and_grader(tmp_path):
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "add.py").write_text("a = 1\n")
    sub = Submission("s", folder)
    key = batch.job_key(sub, "spec1", "grader1")
    assert key == batch.job_key(sub, "spec1", "grader1")
    assert len({key, batch.job_key(sub, "spec2", "grader1"), batch.job_key(sub, "spec1", "grader2")}) == 3
    (folder / "add.py").write_text("a = 2\n")
    assert batch.job_key(sub, "spec1", "grader1") != key
    store = batch.Store(tmp_path / "store")
    g = _graded("s", 1.0, [])
    store.put(g)
    assert store.get(g.key) == g and store.get("nope") is None
    (tmp_path / "store" / "broken.json").write_text("{")
    assert store.get("broken") is None and batch.default_jobs() >= 1


def test_progress_prints_plain_lines_off_a_terminal():
    out = io.StringIO()
    p = Progress(4, cached=1, stream=out)
    p.update("a", True)
    p.update("b", False)
    # The instructor solution is graded beside the submissions but counted apart (as the
    # run's last line counts): its line changes no count.
    p.update(".solution/add", True, solution=True)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("graded a: 1 graded, 0 failed, 2 remaining, 1 unchanged ·")
    assert lines[1].startswith("FAILED b: 1 graded, 1 failed, 1 remaining, 1 unchanged ·") and "ETA" in lines[1]
    assert lines[2].startswith("graded the instructor solution (counted apart): 1 graded, 1 failed, 1 remaining, "
                               "1 unchanged ·")


# --- real gradings (jax) --------------------------------------------------------------------

@pytest.fixture
def quick_add(tmp_path):
    """`add` with one visible and one secret case and no probes: 4 points a submission."""
    cases = ('[[cases]]\nname = "small"\ndims = { M = 16, N = 256 }\nseed = 101\npoints = 2\n\n'
             '[[cases]]\nname = "hidden-wide"\ndims = { M = 40, N = 640 }\nseed = 303\npoints = 2\n'
             'secret = true\n')
    return trimmed_add(tmp_path / "assignments", cases).parent


def _review(export: Path, root: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    proc = run_cli("review", str(export), "-a", "add", "--assignments", str(root), "-o", str(out), *extra)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _scores(out: Path) -> dict[str, str]:
    rows = list(csv.DictReader(io.StringIO((out / "grades.csv").read_text())))
    return {r["submission_id"]: (r["score"], r["status"]) for r in rows}


EXPECTED = {"submission_101": ("4", "graded"), "submission_102": ("4", "graded"),
            "submission_103": ("0", "graded"), "submission_104": ("2", "graded"),
            "submission_105": ("0", "graded")}


@pytest.mark.jax
@pytest.mark.grading
def test_a_class_is_regraded_resumed_and_clustered(quick_add, tmp_path):
    export, out = make_export(tmp_path / "export"), tmp_path / "site"
    first = _review(export, quick_add, out, "--jobs", "2")
    assert first.stdout.startswith("5 submissions: 5 graded now, 0 failed now (timed out, crashed or an "
                                    "autograder error), 0 unchanged since the last run (stored gradings kept); open ")
    assert "graded submission_101" in first.stderr
    assert _scores(out) == EXPECTED
    index = (out / "index.html").read_text()
    # The two solutions (one with every name changed) are one structural cluster, and the
    # out-of-bounds kernel (the solution without jax.jit and with a grid step more: a
    # number) is the same structure (grading/identity/normal.py sets the wrapper aside).
    cluster = index[index.index('id="clusters"'):index.index('id="submissions"')]
    assert "3 submissions" in cluster and "Ada Lovelace" in cluster and "Alan Turing" in cluster
    assert "&lt;script&gt;window.hacked" in cluster and "<script>window" not in index
    findings = list(csv.DictReader(io.StringIO((out / "findings.csv").read_text())))
    assert {(f["submission_id"], f["finding"]) for f in findings} == {
        ("submission_103", "wrong-result"), ("submission_104", "out-of-bounds"),
        ("submission_105", "submission-error")}
    page = (out / "s" / "submission_104.html").read_text()
    stored = [json.loads(f.read_text()) for f in (out / ".review-cache").glob("*.json")]
    key = next(g for g in stored if g["submission_id"] == "submission_104")["results"]["extra_data"]["run_key"]
    assert isinstance(key, int) and "Out-of-bounds access" in page
    # The staff's command grades the submission's own folder, and replays its grading.
    command = html.unescape(page.split('<code id="command">')[1].split("</code>")[0])
    assert command == (f"pallas-autograder grade {(export / 'submission_104').resolve()} -a add "
                       f"--assignments {quick_add.resolve()} --run-key {key}")
    replay = run_cli(*shlex.split(command)[1:], "--results", str(tmp_path / "replay.json"))
    assert replay.returncode == 0, replay.stderr[-2000:]
    assert json.loads((tmp_path / "replay.json").read_text())["score"] == 2.0
    # The secret case is for the staff only: its name (and the command that replays
    # it) is in the staff's report, never in what the student saw.
    seen, staff = page.split('id="staff"')
    assert "hidden-wide" not in seen and "--case hidden-wide --rung tpu-interpret" in staff
    # Near-duplicates, from the programs each grading kept: the disguised copy has Ada's
    # program (one row); the out-of-bounds kernel (the solution without jax.jit and a grid
    # a step too long: one number, but not one program) is near it; the subtraction (0.56)
    # is under the default threshold. (Four programs: too few to set aside what the class
    # shares; see test_near_duplicates for a class that does.)
    pairs = (out / "pairs.html").read_text()
    same = pairs.split('<tr class="same">')[1].split("</tr>")[0]
    near = pairs.split('<tr class="near">')
    assert "Ada Lovelace" in same and "Alan Turing" in same and "window.hacked" not in same
    assert len(near) == 2 and "&lt;script&gt;window.hacked" in near[1] and "0.87" in near[1]
    flat = " ".join(pairs.split())
    assert "Grace Hopper" not in pairs and "4 submissions compared (1 without" in flat
    assert "3 distinct canonical programs" in flat
    # Resumed: nothing changed, nothing regraded; at 0.5 the subtraction is listed beside
    # the others (and browsed); then one changed file, one grading.
    again = _review(export, quick_add, out, "--similarity-threshold", "0.5")
    assert "5 submissions: 0 graded now, 0 failed now (timed out, crashed or an autograder error), 5 unchanged" \
        in again.stdout
    assert "Grace Hopper" in (out / "pairs.html").read_text()
    _browse(out)
    (export / "submission_103" / "add.py").write_text((REPO / "solutions" / "add.py").read_text())
    changed = _review(export, quick_add, out)
    assert "5 submissions: 1 graded now, 0 failed now (timed out, crashed or an autograder error), 4 unchanged" \
        in changed.stdout
    assert _scores(out)["submission_103"] == ("4", "graded")


@pytest.mark.jax
@pytest.mark.grading
def test_a_grading_that_hangs_is_recorded_and_the_batch_goes_on(quick_add, tmp_path):
    export = tmp_path / "export"
    (export / "broken").mkdir(parents=True)
    shutil.copy(corpus("add") / "syntax_error.py", export / "broken" / "add.py")   # graded in about 1 s
    # Sleeps at import for longer than the grading's limit (the spec allows 120 s to import).
    (export / "slow").mkdir()
    (export / "slow" / "add.py").write_text("import time\ntime.sleep(600)\n\n\ndef add(x, y):\n    return x\n")
    proc = _review(export, quick_add, tmp_path / "site", "--timeout", "10")
    # Counted as the progress counts them: one graded, one failed (not "2 graded ... 1 failed").
    assert "2 submissions: 1 graded now, 1 failed now (timed out, crashed or an autograder error), 0 unchanged" \
        in proc.stdout
    assert "FAILED slow: 1 graded, 1 failed" in proc.stderr or "graded broken: 1 graded, 1 failed" in proc.stderr
    assert _scores(tmp_path / "site") == {"broken": ("0", "graded"), "slow": ("", "timeout")}
    page = (tmp_path / "site" / "s" / "slow.html").read_text()
    assert "status timeout" in page and "Timed out: the grading was stopped after 1" in page
    assert "(the limit was 10 s: review --timeout)" in page and 'id="reason"' in page
    # What this regrade produced, not an invented "what the student saw": the grader's last
    # lines (its progress: where it was when stopped), and the replay with the run key review
    # drew; no empty grading-data box.
    assert "What the student saw" not in page and "The autograder itself failed" not in page
    tail = html.unescape(page.split('<code id="failure-tail">')[1].split("</code>")[0])
    assert "grading: importing add.py and tracing it" in tail
    replay = html.unescape(page.split('<code id="replay">')[1].split("</code>")[0])
    stored = [json.loads(f.read_text()) for f in (tmp_path / "site" / ".review-cache").glob("*.json")]
    key = next(g for g in stored if g["submission_id"] == "slow")["run_key"]
    assert isinstance(key, int) and replay.endswith(f"--run-key {key}") and "Grading data" not in page


@pytest.mark.jax
@pytest.mark.grading
def test_the_counts_agree_the_solution_apart_and_a_timeout_shows_its_lines_once(tmp_path):
    """Issue 45: the progress said "9 stored" and the last line "8 unchanged" (the instructor
    solution counted in one, not the other), and a failed grading's page printed its
    stderr line twice. An endless loop (traced at import) is stopped by review's limit."""
    speed = '[speed]\nchip = "v5e"\n[[speed.sizes]]\nname = "s1"\ndims = { M = 64, N = 256 }\ndtype = "float32"\n'
    root = trimmed_add(tmp_path / "assignments", '[[cases]]\nname = "small"\ndims = { M = 16, N = 256 }\n'
                                                 'seed = 101\npoints = 2\n', speed).parent
    export, out = tmp_path / "export", tmp_path / "site"
    (export / "broken").mkdir(parents=True)
    shutil.copy(corpus("add") / "syntax_error.py", export / "broken" / "add.py")
    first = _review(export, root, out)
    assert first.stdout.startswith("1 submission: 1 graded now, 0 failed now (timed out, crashed or an autograder "
                                   "error), 0 unchanged since the last run (stored gradings kept); the instructor "
                                   "solution (counted apart): graded now; open ")
    assert "graded the instructor solution (counted apart): " in first.stderr
    (export / "loop").mkdir()
    shutil.copy(corpus("add") / "infinite_loop.py", export / "loop" / "add.py")
    again = _review(export, root, out, "--timeout", "8")
    assert again.stderr.splitlines()[-1].startswith("FAILED loop: 0 graded, 1 failed, 0 remaining, 1 unchanged ·")
    assert again.stdout.startswith("2 submissions: 0 graded now, 1 failed now (timed out, crashed or an autograder "
                                   "error), 1 unchanged since the last run (stored gradings kept); the instructor "
                                   "solution (counted apart): unchanged; open ")
    page = (out / "s" / "loop.html").read_text()
    assert "Timed out: the grading was stopped after" in page and "(the limit was 8 s: review --timeout)" in page
    tail = html.unescape(page.split('<code id="failure-tail">')[1].split("</code>")[0])
    assert tail.splitlines()[-1].startswith("grading: importing add.py and tracing it")
    # Each line the grader wrote is on the page once (here all are the reason's: no staff copy).
    for line in tail.splitlines():
        assert page.count(html.escape(line, quote=True).replace("&#x27;", "&#39;")) == 1, line
    assert 'id="stderr"' not in page
    from test_html import _chromium
    chromium = _chromium()
    sync_api = pytest.importorskip("playwright.sync_api", reason="the test extras (playwright) are not installed")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        view = browser.new_page()
        for name in ("loop", "broken"):
            view.goto((out / "s" / f"{name}.html").as_uri())
            assert audit(view, widths=(1280, 390)) == [], name
        browser.close()


@pytest.mark.jax
@pytest.mark.grading
def test_the_same_gradings_on_a_local_dask_cluster_of_two_workers(quick_add, tmp_path):
    distributed = pytest.importorskip("distributed", reason="the [dask] extra is not installed")
    export, out = make_export(tmp_path / "export"), tmp_path / "site"
    for name in ("submission_102", "submission_104", "submission_105"):     # two gradings are enough
        shutil.rmtree(export / name)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        proc = _review(export, quick_add, out, "--dask", cluster.scheduler_address)
    assert "2 graded now" in proc.stdout
    assert _scores(out) == {k: v for k, v in EXPECTED.items() if k in ("submission_101", "submission_103")}


def _browse(out: Path) -> None:
    """The site in a real browser (Debian's Chromium through Playwright), from
    file://: every page loads without a console error or a request off the disk;
    the table starts with the students who need help, sorts and filters; each kind
    of page meets WCAG 2.2 AA (axe-core) and reflows at 320 px; screenshots are saved."""
    from test_html import _chromium
    chromium = _chromium()
    sync_api = pytest.importorskip("playwright.sync_api", reason="the test extras (playwright) are not installed")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        errors = []
        page.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: errors.append(f"request {r.url}") if not r.url.startswith("file:") else None)
        for sub in sorted((out / "s").glob("*.html")):
            page.goto(sub.as_uri())
            assert "What the student saw" in page.content() and page.locator("#staff").count() == 1
        # The out-of-bounds submission's page draws its block map (from the map data its
        # results.json carries) as a figure beside the text the student saw.
        page.goto((out / "s" / "submission_104.html").as_uri())
        drawn = page.locator("#feedback ~ section figure.blockmap")
        assert drawn.count() == 1 and drawn.locator("svg g > title").count() >= 4
        assert "asked for outside the array" in drawn.locator(".map-legend").inner_text()
        # The line that holds the fault, as written, then the map as the student saw it (text).
        pres = page.locator("#feedback ~ section pre").all_inner_texts()
        assert pres[0].strip() == "grid=(x.shape[0] // 8, x.shape[1] // 128 + 1)," and \
            any("X asked for outside the array" in p for p in pres)
        drawn.screenshot(path=str(out / "map.png"))
        assert audit(page) == []
        # The near-duplicate pages: the list, and each pair's programs side by side, what
        # differs marked (the subtraction where the others add).
        page.goto((out / "pairs.html").as_uri())
        assert page.locator("#pairs tbody tr").count() == 3 and "never a verdict" in page.content()
        assert audit(page) == []
        for pair in sorted((out / "p").glob("*.html")):
            page.goto(pair.as_uri())
            assert page.locator("#diff tbody tr").count() > 20
        assert audit(page) == []
        page.goto((out / "pairs.html").as_uri())
        page.locator("#pairs a", has_text="side by side").last.click()     # the subtraction, listed last
        assert page.locator("#diff tr.only-a, #diff tr.only-b, #diff tr.changed").count() >= 2
        page.screenshot(path=str(out / "pair.png"), full_page=True)
        page.goto((out / "index.html").as_uri())
        page.screenshot(path=str(out / "screenshot.png"), full_page=True)
        assert page.locator("#histogram li").count() == 11 and page.locator("#findings li").count() == 3
        assert page.evaluate("window.hacked") is None          # a name is text, never markup
        # By need: the lowest scores first (no grading failed here).
        names = page.locator("#table tbody tr td:nth-child(2)").all_inner_texts()
        assert names == ["Barbara Liskov", "Grace Hopper", "<script>window.hacked = 1</script>", "Ada Lovelace",
                         'Alan Turing, =HYPERLINK("http://x")']
        assert audit(page) == []
        page.locator("#table th button", has_text="Score").click()
        scores = page.locator("#table tbody tr td:nth-child(4)").all_inner_texts()
        assert [s.split(" /")[0] for s in scores] == ["0", "0", "2", "4", "4"]
        page.locator("#table th button", has_text="Score").click()
        first = page.locator("#table tbody tr td:nth-child(4)").all_inner_texts()[0]
        assert first.split(" /")[0] == "4"
        page.fill("#filter", "out-of-bounds")
        visible = page.locator("#table tbody tr:visible td:nth-child(2)").all_inner_texts()
        assert visible == ["<script>window.hacked = 1</script>"]
        page.fill("#filter", "")
        page.locator("#findings a", has_text="wrong-result").click()
        # (The link sets the page's hash; its filter applies on the hashchange event, which
        # comes after the click returns: wait for it, then read.)
        page.wait_for_function("location.hash.startsWith('#filter:')")
        page.wait_for_function("document.querySelectorAll('#table tbody tr').length > "
                               "[...document.querySelectorAll('#table tbody tr')].filter(r => r.offsetParent).length")
        assert page.locator("#table tbody tr:visible td:nth-child(2)").all_inner_texts() == ["Grace Hopper"]
        page.locator("#table a", has_text="Grace Hopper").click()
        assert "What the student saw" in page.content() and page.locator("section.test.fail").count() >= 1
        browser.close()
    assert errors == []
    assert (out / "screenshot.png").stat().st_size > 10_000 and (out / "map.png").stat().st_size > 2_000
    print(f"screenshots: {out / 'screenshot.png'}, {out / 'map.png'}, {out / 'pair.png'}")
