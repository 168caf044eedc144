"""The hostile corpus: every attack in tests/hostile/attacks, graded by the real
run_autograder in a Gradescope layout (as root when the suite runs as root).

For each attack: results.json is valid; the score is at most what the honest
part of the submission earns (exactly that where the attack should change
nothing); the expected finding is reported; no process is left running;
the grader's source tree and package are unchanged; nothing from
submission_metadata.json, the solution, the hidden case or the grader's
environment reaches the results; the results folder holds only results.json;
nothing of the student user's is left in the temp folders.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import fresh_root, speed_output

from autograder.feedback.results_format import validate
from autograder.isolation import confinement

pytestmark = [pytest.mark.jax, pytest.mark.grading]   # grades through real JAX in a child process
# The attacks CI also runs on the course's other JAX release (`-m releases`): those whose
# containment goes through what differs by release (the traced program and its document,
# the rebuild, lowering rules, fills, the one-kernel analyses). The rest are contained by
# processes, users and limits, which no JAX release touches; the whole corpus runs on
# both releases by hand before a release is added (`-m grading tests/test_hostile.py`
# with that release's venv), and on the default release in every CI run. Each rule of the
# structure check runs on both releases in test_serial (test_outside_a_kernel_data_may_only_be_moved),
# and the schema's grammar is pure Python: their attacks here run on the default release only.
ON_EVERY_RELEASE = {
    "two_faced_probe_case.py", "two_faced_production.py", "vmem_two_faced_matmul.py",
    "taint_through_scan.py", "closed_over_run_scoped.py", "platform_branch.py", "platform_in_kernel.py",
    "platform_in_index_map.py", "scoped_refs_outside.py",
    "fills_recognised_by_range.py", "forged_line_number.py", "reregister_lowering.py",
    "host_callback_kernel.py", "nan_wildcard.py", "whole_array_block_at_speed_size.py",
    "fills_recognised_as_one_value.py", "hangs_off_the_tests_grid_order.py", "array_aval_forged.py",
}

HOSTILE = Path(__file__).resolve().parent / "hostile"
REPO = HOSTILE.parent.parent
ATTACKS = HOSTILE / "attacks"
ROOT_USER = os.geteuid() == 0
FULL = 6.0           # the hostile spec: 2 + 2 correctness points, 1 + 1 probe points
PROBED = 11.0        # add_probed: 4 correctness points and 7 probes (the "one kernel" attacks)
MARKERS = {
    "metadata": "METADATA-SECRET-7f3a",
    "solution": "SOLUTION-SECRET-91c2",
    "hidden case": "hidden-secret-wide",
    "hidden spec": "HIDDEN-CASE-MARKER",
    "environment": "ENV-SECRET-55d0",
    "hidden case shape": "SHAPE-(40, 384)",
    "custom checks": "CHECKS-SECRET-4d1e",
}


@dataclass(frozen=True)
class Expect:
    score: float                # the exact score
    problems: tuple[str, ...] = ()   # finding IDs or submission-error problems that must appear
    root_only: bool = False     # only safe when student code runs as another user
    says: str = ""              # text the feedback (summary) must contain
    never: tuple[str, ...] = ()  # text no output of results.json may contain
    # "add" (the hostile spec), "add_probed" (every probe, a production and a speed
    # size) or a bundled assignment ("matmul", "dma_scale"), graded as its entry file
    assignment: str = "add"
    test_says: tuple[tuple[str, str], ...] = ()   # (test number, text its output must contain)
    # What may stand in for ``problems`` on a loaded machine (another limit reached first;
    # the checks after the grading, no file and no process left, are the containment).
    instead: tuple[str, ...] = ()


EXPECT = {
    "forge_events.py": Expect(0.0, ("channel-tampered",)),
    "write_results.py": Expect(FULL),
    "fake_protocol_stdout.py": Expect(FULL),
    "detached_daemon.py": Expect(FULL),
    "spin_ignoring_sigterm.py": Expect(0.0, ("import-timeout",)),
    "memory_bomb.py": Expect(0.0, ("memory-limit",)),
    # The bomb leaves the child's session: the grader kills whatever of the student
    # user leaves it, every half second, so the honest kernel is graded in full.
    "fork_bomb.py": Expect(FULL, root_only=True),
    # 1 GB written within the 15 s import limit: under load the limit can come first.
    "disk_fill.py": Expect(0.0, ("disk-limit",), root_only=True, instead=("import-timeout",)),
    "stdout_flood.py": Expect(FULL, says="earlier bytes of output cut"),
    "kill_parent.py": Expect(FULL, root_only=True),
    # A host callback: the traced program is refused, nothing of it runs.
    "replay_by_shape.py": Expect(0.0, ("not-a-kernel", "host-callback", "nothing-to-check")),
    # Work outside the kernel: the index-map check examined no kernel doing the work.
    "predict_inputs.py": Expect(2.0, ("wrong-result", "work-outside")),
    "patch_numpy_compare.py": Expect(2.0, ("wrong-result",)),
    "lying_output_object.py": Expect(0.0, ("wrong-result", "wrong-shape", "no-pallas-call", "nothing-to-check")),
    "nan_wildcard.py": Expect(2.0, ("numerics",)),
    "shadow_modules": Expect(FULL),
    "symlink_to_solution": Expect(0.0, ("file-missing",)),
    "non_utf8": Expect(0.0, ("not-utf8",)),
    "huge_upload": Expect(FULL, says="dataset.bin (3221225472 bytes"),
    "many_files": Expect(FULL, says="only the first 500 are copied"),
    "zipped_upload": Expect(FULL),
    "notebook_shell_escapes.ipynb": Expect(FULL),
    "exit_at_import.py": Expect(0.0, ("exit-at-import",)),
    "os_exit_in_call.py": Expect(0.0, ("killed",)),
    "tamper_grader_files.py": Expect(FULL, root_only=True),
    # No kernel under the grader: the structure check says so, and the index-map
    # check has nothing to examine (no kernel, no probe points).
    "detect_grader_use_jnp.py": Expect(FULL - 2, ("no-pallas-call", "nothing-to-check")),
    "fallback_to_jnp.py": Expect(FULL - 2, ("no-pallas-call", "nothing-to-check")),
    "exception_leaks_solution.py": Expect(0.0, ("import-error",)),
    "read_metadata.py": Expect(FULL),
    "snoop_grader_proc.py": Expect(FULL),
    # Forgeries that worked while student code shared the process that ran its kernel:
    # each now earns what its real kernel (x - y, see wrong_add.py) deserves.
    "patch_numpy_save_load.py": Expect(2.0, ("wrong-result",)),
    "atexit_rewrite_outputs.py": Expect(2.0, ("wrong-result",)),
    "patch_grader_module.py": Expect(2.0, ("wrong-result",)),
    "meta_path_finder.py": Expect(2.0, ("wrong-result",)),
    "settrace_rewrite_local.py": Expect(2.0, ("wrong-result",)),
    "reregister_lowering.py": Expect(2.0, ("wrong-result",)),
    "gc_channel_forge.py": Expect(0.0, ("channel-tampered",)),
    # No kernel at all (jax.numpy), static facts patched where they are not computed:
    # right numbers, but not a kernel, and no probe points.
    "forge_static_facts.py": Expect(4.0, ("no-pallas-call", "nothing-to-check")),
    "host_callback_kernel.py": Expect(0.0, ("host-callback", "nothing-to-check")),
    "print_hidden_shapes.py": Expect(FULL, says="SHAPE-(16, 256)"),
    "sysv_shared_memory.py": Expect(0.0, ("memory-limit",), root_only=True),
    "run_lock_leftover.py": Expect(FULL, root_only=True),
    "deep_expression.py": Expect(0.0, ("syntax-error",)),
    "deep_notebook": Expect(0.0, ("bad-notebook",)),
    "markdown_names": Expect(0.0, ("file-missing",), never=("\n#### Score", "\n```\n#### ")),
    # The checks are copied for the grader's child only after every trace, into a
    # folder the student user cannot enter; the source is closed to it.
    "read_checks.py": Expect(FULL, root_only=True, says="Instructor checks: 1 of 1 passed."),
    # One kernel for every check: the tracer is asked once per size, and each size's
    # program is a claim about that size only (grading/judge/faces.py).
    "two_faced_probe_case.py": Expect(0.0, ("no-pallas-call", "nothing-to-check"), assignment="add_probed"),
    "two_faced_secret_case.py": Expect(0.0, ("no-pallas-call", "nothing-to-check"), assignment="add_probed"),
    "two_faced_production.py": Expect(PROBED - 1, ("inconsistent-kernel", "another-kernel"),
                                      assignment="add_probed", test_says=(("S1", "No estimate"),)),
    "one_step_at_speed_size.py": Expect(PROBED - 1, ("inconsistent-kernel",), assignment="add_probed",
                                        test_says=(("S1", "a kernel no graded case built"),),
                                        never=("x the instructor solution",)),
    "vmem_two_faced_matmul.py": Expect(17.0, ("inconsistent-kernel",), assignment="matmul"),
    # Sizes no test runs: their numbers are free and checked there by what reads the size
    # (issue 44, section 2): the VMEM budget and the index-map scan at that size, input
    # coverage and the body's numbers for the estimate, the dtypes for a stress input.
    "whole_array_block_at_speed_size.py": Expect(PROBED - 1, ("vmem-overflow",), assignment="add_probed",
                                                 test_says=(("S1", "192.0 MiB of VMEM"),),
                                                 never=("x the instructor solution", "a secret case")),
    "small_blocks_at_production_only.py": Expect(18.0, assignment="matmul"),
    "skips_k_blocks_at_production.py": Expect(18.0, assignment="matmul",
                                              test_says=(("S1", "a number of lt in the kernel body is 1"),)),
    "misses_blocks_at_production.py": Expect(17.0, ("uninitialized-memory", "not-covered"), assignment="matmul"),
    "k_cut_short_at_speed_size.py": Expect(18.0, assignment="matmul",
                                           test_says=(("S1", "the grid never reads 4032 blocks of input 0"),)),
    # (The bfloat16 product the compiler refuses is the numerics problem's own bug: P2 is not
    # charged again, session 9's same_bug_by.)
    "f32_accumulator_at_stress_only.py": Expect(12.0, ("inconsistent-kernel", "other-dtype", "numerics"),
                                                assignment="matmul"),
    # Every check on every graded case: a bug at the secret sizes only is found there,
    # and a race behind a split of faces is charged as the race it is.
    "unwritten_read_at_secret_sizes.py": Expect(PROBED - 2, ("uninitialized-memory",), assignment="add_probed"),
    "race_behind_a_face_split.py": Expect(15.0, ("data-race",), assignment="dma_scale"),
    # Probe runs look like test runs; a probe run that hangs is charged (section 3).
    "fills_recognised_as_one_value.py": Expect(PROBED - 4, ("uninitialized-memory",), assignment="add_probed"),
    "hangs_off_the_tests_grid_order.py": Expect(PROBED - 1, ("grid-order-dependence", "probe-run-hung"),
                                                assignment="add_probed"),
    "hangs_unless_memory_is_nan.py": Expect(PROBED - 7, ("timeout",), assignment="add_probed"),
    # A secret case's failure says only what the grader chooses (section 4).
    "exception_class_names_the_shape.py": Expect(PROBED - 2, ("exception",), assignment="add_probed",
                                                 never=("Shape_", "leak_", "40_384", "M=40")),
    "exit_status_names_the_shape.py": Expect(PROBED - 2, ("killed",), assignment="add_probed",
                                             never=("exit code 40", "(40)")),
    "share_of_wrong_outputs_names_the_shape.py": Expect(PROBED - 2, ("wrong-result",), assignment="add_probed",
                                                        test_says=(("2.1", "1% to 10% of the outputs"),),
                                                        never=("2.5%", "384 of")),
    # Work outside the kernel wherever the data goes (compile readiness keeps its point).
    "scalar_work_outside.py": Expect(1.0, ("work-outside",), assignment="add_probed"),
    "closed_over_run_scoped.py": Expect(0.0, ("work-outside", "compile-reject"), assignment="add_probed"),
    "taint_through_cond.py": Expect(1.0, ("work-outside",), assignment="add_probed"),
    "taint_through_scan.py": Expect(1.0, ("work-outside",), assignment="add_probed"),
    # A copy kernel: the probes examined a copy and earn nothing.
    "copy_kernel_jnp_work.py": Expect(1.0, ("work-outside",), assignment="add_probed"),
    # Outside a kernel, data may only be moved (an allow-list, not information flow): each of
    # these got full marks from a rule that followed the data (a copy kernel, the sum outside).
    "scoped_refs_outside.py": Expect(0.0, ("work-outside", "compile-reject"), assignment="add_probed"),
    "cond_rebuilds_bits.py": Expect(1.0, ("work-outside",), assignment="add_probed"),
    "while_rebuilds_bits.py": Expect(1.0, ("work-outside",), assignment="add_probed"),
    "table_lookup_sum.py": Expect(1.0, ("work-outside",), assignment="add_probed"),
    # Fills drawn from the run key element by element, in every run: neither fixed values
    # nor a range gives them away, and the tests see them too.
    "fills_mapped_to_zero.py": Expect(PROBED - 4, ("uninitialized-memory",), assignment="add_probed"),
    "fills_recognised_by_range.py": Expect(PROBED - 4, ("uninitialized-memory",), assignment="add_probed"),
    # Every rung judges the branch a TPU would run (here x - y): the rebuilt program keeps only
    # that branch, outside the kernel (XLA's "tpu") and inside it (Mosaic's), index maps too.
    "platform_branch.py": Expect(PROBED - 4, ("wrong-result",), assignment="add_probed"),
    "platform_in_kernel.py": Expect(PROBED - 4, ("wrong-result",), assignment="add_probed"),
    "platform_in_index_map.py": Expect(PROBED - 4, ("out-of-bounds",), assignment="add_probed"),
    # A document of allowed names and odd structure, at the secret case only: refused there
    # by the schema's grammar, never a crash of the parent's analyses. The secret case's
    # tests are charged; every check ran on the visible case and vouches from there.
    "odd_document_secret_case.py": Expect(PROBED - 2, ("unsupported",), assignment="add_probed"),
    # A field of another type (array_aval: 7) at the secret and speed/production sizes: the
    # grammar passes it; every parent reader runs under one guard and reads it by its type,
    # and the grader's child refuses a mapping that misdescribes its operand. The secret
    # case's tests and the VMEM budget at the production size earn nothing (issue 44, §4).
    "array_aval_forged.py": Expect(PROBED - 3, ("unsupported",), assignment="add_probed"),
    # A primitive the grader never rebuilds (a foreign function) at the secret size only: no
    # crash, and neither it nor its target is named. (M > 16 takes in the production size too:
    # a program refused where the VMEM budget is read gives no figure, and that check earns
    # nothing, as a refused secret case does.)
    "secret_only_primitive.py": Expect(PROBED - 3, ("unsupported",), assignment="add_probed",
                                       never=("ffi_call", "secret_native_sum")),
    "forged_line_number.py": Expect(0.0, ("unsupported", "nothing-to-check"), assignment="add_probed"),
    "trojan_source_names": Expect(0.0, ("file-missing",), never=("\u202e", "\u200b", "\u2066")),
}


def test_every_attack_in_the_corpus_has_an_expectation():
    assert sorted(p.name for p in ATTACKS.iterdir() if p.name != "__pycache__") == sorted(EXPECT)
    assert ON_EVERY_RELEASE <= set(EXPECT)
    for p in ATTACKS.iterdir():
        doc = (p / "README.md").read_text() if p.is_dir() and (p / "README.md").exists() else (
            (p / "add.py").read_text(errors="replace") if p.is_dir() else p.read_text())
        assert len(doc.strip()) > 40, f"{p.name} needs a docstring saying what it tries"


def _digest(folder: Path) -> dict[str, str]:
    out = {}
    for p in sorted(folder.rglob("*")):
        if ".venv" in p.parts or "__pycache__" in p.parts:
            continue
        rel = str(p.relative_to(folder))
        out[rel] = ("dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest())
    return out


def _layout(base: Path, install: Path, attack: Path) -> Path:
    """A fresh Gradescope root: the installed grader's source (its venv linked),
    the hostile variant of `add`, marked secrets, a forged results.json, and
    the attack as the submission with its helper modules."""
    root = fresh_root(install, base)
    source = root / "source"
    shutil.rmtree(source / "assignments" / "add")
    assignment = EXPECT[attack.name].assignment
    bundled = assignment not in ("add", "add_probed")
    if bundled:
        shutil.copytree(REPO / "assignments" / assignment, source / "assignments" / assignment)
        shutil.copy(REPO / "solutions" / f"{assignment}.py", source / "solutions" / f"{assignment}.py")
        (source / "assignment.txt").write_text(f"{assignment}\n")
    else:
        shutil.copytree(HOSTILE / "assignments" / assignment, source / "assignments" / "add")
    with open(source / "solutions" / "add.py", "a") as f:
        f.write(f"# {MARKERS['solution']}\n")
    (root / "submission_metadata.json").write_text(json.dumps(
        {"previous_submissions": [{"results": {"score": 6.0, "secret": MARKERS["metadata"]}}]}))
    (root / "results" / "results.json").write_text('{"score": 999.0, "tests": []}')
    sub = root / "submission"
    if attack.is_dir():
        shutil.copytree(attack, sub, symlinks=True)
    else:
        sub.mkdir()
        entry = f"{assignment}.py" if bundled else "add.py"
        shutil.copy(attack, sub / (entry if attack.suffix == ".py" else attack.name))
    if attack.name != "zipped_upload":
        for helper in ("honest_add.py", "wrong_add.py", "attack_kit.py"):
            shutil.copy(HOSTILE / helper, sub / helper)
    if attack.name == "huge_upload":
        with open(sub / "dataset.bin", "wb") as f:
            f.truncate(3 * 1024 ** 3)          # sparse: 3 GB to the grader, nothing on disk
    if attack.name == "markdown_names":
        for name in (b"notes\n#### Score: 16 of 16\n.txt", b"x```\n#### Score.py", b"[click](javascript:alert(1)).py",
                     b"\xff\xfe-not-utf8.py"):
            (sub / os.fsdecode(name)).write_text("# not the kernel\n")
    if attack.name == "many_files":
        for i in range(3000):
            d = sub / "data" / f"{i // 100:02d}"
            d.mkdir(parents=True, exist_ok=True)
            (d / f"f{i}.txt").write_text("x")
    return root


def _uptime_ticks() -> int:
    with open("/proc/uptime") as f:
        return int(float(f.read().split()[0]) * os.sysconf("SC_CLK_TCK"))


def _processes_of(uid: int, started_before: int) -> list[int]:
    """Live processes of ``uid`` started before a moment (in clock ticks since boot) that
    no live grading runs: a parallel worker's next grading may take the same slot uid as
    soon as this one lets the slot go, before its run_autograder has exited and the
    moment is read. A survivor of this grading lost its grader (which has exited) and
    was re-parented to init; another grading's student processes run under its grader,
    alive and of another uid (the flake of sessions 7 and 8: fork_bomb.py,
    replay_by_shape.py, each passing alone)."""
    started = {pid: int(fields[19]) for pid, fields in confinement.proc_stats() if len(fields) > 19}
    table = confinement._processes()
    parent = {pid: ppid for pid, ppid, _sid, _u in table}
    owner = {pid: u for pid, _ppid, _sid, u in table}

    def under_a_live_grading(pid: int) -> bool:
        seen = set()
        while pid > 1 and pid not in seen:
            seen.add(pid)
            pid = parent.get(pid, 0)
            if pid > 1 and owner.get(pid) not in (uid, None):
                return True
        return False
    return [pid for pid, _ppid, _sid, u in table
            if u == uid and started.get(pid, 0) <= started_before and not under_a_live_grading(pid)]


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                    if text.encode() in f.read():
                        found.append(int(entry.name))
            except OSError:
                pass
    return found


def _temp_files_of(uid: int) -> list[str]:
    left = []
    for folder in confinement.temp_folders():
        try:
            left += [e.path for e in os.scandir(folder)
                     if e.stat(follow_symlinks=False).st_uid == uid]
        except OSError:
            pass
    return left


def _problems(doc: dict) -> set[str]:
    found = set()
    for t in doc["tests"]:
        found.update(t.get("tags", []))
        extra = t.get("extra_data") or {}
        if extra.get("problem"):
            found.add(extra["problem"])
    return found


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.releases) if n in ON_EVERY_RELEASE else n
                                  for n in sorted(EXPECT)])
def test_attack_is_contained(name, gradescope_install, tmp_path):
    expect = EXPECT[name]
    if expect.root_only and not ROOT_USER:
        pytest.skip("only safe when student code runs as another user (run the suite as root)")
    root = _layout(tmp_path, gradescope_install, ATTACKS / name)
    source_before = _digest(root / "source")
    package = gradescope_install / "source" / "autograder"
    package_before = _digest(package)
    t0 = time.monotonic()
    proc = subprocess.run([str(root / "source" / "run_autograder")], capture_output=True,
                          text=True, timeout=420,
                          env={**os.environ, "AUTOGRADER_ROOT": str(root),
                               "PALLAS_TEST_SECRET": MARKERS["environment"]})
    seconds = time.monotonic() - t0
    ended = _uptime_ticks()
    print(f"{name}: graded in {seconds:.1f} s")

    text = (root / "results" / "results.json").read_text()
    doc = json.loads(text)
    assert validate(doc) == [], validate(doc)
    assert os.listdir(root / "results") == ["results.json"]
    assert doc["tests"] and not doc["tests"][0]["name"].startswith("Autograder error"), \
        proc.stderr[-3000:]
    assert doc["score"] == pytest.approx(expect.score), \
        (doc["score"], _problems(doc), [(t["name"], t["score"], t.get("tags")) for t in doc["tests"]])
    assert set(expect.problems) <= _problems(doc) or expect.instead and set(expect.instead) <= _problems(doc), \
        _problems(doc)
    assert expect.says in doc["output"]
    for text in expect.never:
        assert text not in doc["output"] and all(text not in t["output"] for t in doc["tests"]), text
    for number, text in expect.test_says:
        said = speed_output(doc) if number == "S1" else next(t["output"] for t in doc["tests"] if t["number"] == number)
        assert text in said, (number, text)
    assert ("could not switch your code" in doc["output"]) == (not ROOT_USER)
    for what, marker in MARKERS.items():
        assert marker not in text, f"the {what} leaked into results.json"

    # This grading's own student uid (a slot of its own when other gradings run at once).
    uid = doc["extra_data"]["student_uid"]
    assert (uid != os.getuid()) == ROOT_USER
    mine = (lambda: _processes_of(uid, ended)) if ROOT_USER else list
    deadline = time.monotonic() + 3
    while (mine() or _processes_mentioning(str(root))) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not mine(), "a student process survived grading"
    assert not _processes_mentioning(str(root)), "a process of this grading survived"
    assert _digest(root / "source") == source_before, "the source tree changed"
    assert _digest(package) == package_before, "the grader's package changed"
    if ROOT_USER:
        assert not _temp_files_of(uid), "student files were left in the temp folders"
        assert not [i for i, owner, _n in confinement._ipc("shm") if owner == uid], "shared memory left"
    assert seconds < 300


@pytest.mark.skipif(not ROOT_USER, reason="needs root to start the grader as an ordinary user")
def test_a_grader_without_root_still_isolates_and_says_so_once():
    """A student's laptop: the grader runs as an ordinary user, so it cannot
    switch users; the child is still confined and the feedback says so once."""
    # A uid of no grading slot (root gradings running at once kill their slots' processes).
    uid = confinement.SLOT_UID_BASE + confinement.SLOTS
    gid = confinement.student_identity().gid
    out = Path(tempfile.mkdtemp(prefix="pallas-noroot-"))
    try:
        os.chmod(out, 0o777)
        proc = subprocess.run(
            [sys.executable, "-m", "autograder", "grade", str(HOSTILE / "honest_add.py"),
             "-a", "add", "--case", "small", "--results", str(out / "results.json")],
            capture_output=True, text=True, timeout=300,
            cwd=Path(__file__).resolve().parent.parent, env={**os.environ, "HOME": str(out)},
            user=uid, group=gid, extra_groups=[])
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert proc.stdout.count("could not switch your code") == 1
        doc = json.loads((out / "results.json").read_text())
        assert validate(doc) == [] and doc["extra_data"]["student_uid"] == uid
        # honest_add.py defines honest_add, not add: a clear finding, not a crash.
        assert {t["extra_data"].get("problem") for t in doc["tests"]} == {"function-missing"}
    finally:
        shutil.rmtree(out, ignore_errors=True)
