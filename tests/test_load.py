"""Limits never cost a correct kernel points under load: an instructor solution
gets full marks, every probe included, while two spinning processes keep both
cores busy (beside whatever the other test worker runs).

Two solutions, not four: matmul (the most runs and grid points, the slowest
probes) and softmax (the longest of the four under load, 33 s, in the last full
run). Every limit comes from the same formula (`grading.calibration`), and
`check SLUG` grades each solution inside the emulated Gradescope container
(half a CPU) as well."""
import subprocess
import sys
from contextlib import contextmanager

import pytest
from conftest import REPO

pytestmark = [pytest.mark.jax, pytest.mark.grading]


@contextmanager
def busy_cores(n: int = 2):
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for p in spinners:
            p.kill()
            p.wait()


@pytest.mark.parametrize("slug", ["matmul", "softmax"])
def test_every_solution_gets_full_marks_while_both_cores_are_busy(grade_cli, slug):
    with busy_cores(2):
        doc, _ = grade_cli(REPO / "solutions" / f"{slug}.py", slug)
    assert [t["number"] for t in doc["tests"] if t["status"] != "passed"] == []
    assert doc["score"] == sum(t["max_score"] for t in doc["tests"]) > 0
    probes = [t for t in doc["tests"] if t["number"].startswith("P")]
    assert probes and not any(t.get("extra_data", {}).get("note") for t in probes), \
        "no check ran out of time"
    rungs = {t["name"].split(" · ")[1] for t in doc["tests"] if " · " in t["name"]}
    assert rungs == {"generic interpreter", "TPU interpret mode"}
