"""The chip check's inputs (no JAX): what a chip run depends on, hashed group by
group, and a warning when the tree has changed since the chip check that
docs/tpu-runs.md reports (CI has no chip: the check is then due on the next
TPU host; the warning says which groups changed)."""
import shutil
import warnings

from conftest import REPO

from benchmarks.chip import inputs, report


def test_a_changed_file_changes_its_group_and_only_its_group(tmp_path):
    for group in inputs.GROUPS.values():
        for pattern in group:
            for p in REPO.glob(pattern):
                if p.is_file() and "__pycache__" not in p.parts:
                    dest = tmp_path / p.relative_to(REPO)
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy(p, dest)
    before = inputs.digests(tmp_path)
    assert before == inputs.digests(REPO) and inputs.changed(before, tmp_path) == []
    stage = tmp_path / "autograder" / "tpu" / "stage" / "kernel.py"
    stage.write_text(stage.read_text() + "\n# a change\n")
    (tmp_path / "assignments" / "matmul" / "corpus" / "new_kernel.py").write_text("x = 1\n")
    assert inputs.changed(before, tmp_path) == ["the TPU stage (autograder/tpu)", "assignment matmul"]
    assert inputs.changed({}, tmp_path) == list(inputs.GROUPS)


def test_the_report_writes_the_hashes_it_reads_back(tmp_path):
    import json
    run = tmp_path / "callX"
    run.mkdir()
    recorded = inputs.digests()
    (run / "summary.json").write_text(json.dumps({"phases": {"speed": 1.0}, "inputs": recorded}))
    assert report.recorded_inputs("\n".join(report._inputs([run]))) == recorded


def test_the_last_chip_check_ran_this_tree_or_a_warning_says_what_changed():
    text = (REPO / "docs" / "tpu-runs.md").read_text()
    recorded = report.recorded_inputs(text)
    assert set(recorded) == set(inputs.GROUPS), "docs/tpu-runs.md records every group's hash"
    stale = inputs.changed(recorded)
    if stale:
        warnings.warn(f"changed since the last chip check (docs/tpu-runs.md): {', '.join(stale)}; run "
                      "benchmarks/chip_check.py on a TPU host (docs/guides/tpu.md, 'The chip check')", stacklevel=1)
