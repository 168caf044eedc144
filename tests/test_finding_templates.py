"""Every finding template renders, in every format, for a visible case and for
a secret one; a secret case's rendering shows none of the values it withholds
(no JAX). Evidence is synthesized from what the templates read, so a new field
read unguarded by a template is caught here, not in a student's grading."""
import re

import pytest

from autograder.feedback import render
from autograder.findings import CATALOGUE, TEMPLATES, Finding

# A plausible value of each evidence field the templates read (the types graders write).
VALUES = {
    "detail": "detail text", "frames": ["add.py:3 in add"], "report": ["RACE DETECTED"], "fills_passing": ["zero"],
    "outside": {"add": 1}, "operand": "input 0", "numpy": "x + y", "nonfinite": 0, "limit_s": 5.0,
    "block_index": [0, 1], "where": "add.py:3", "wanted": "add(x, y)", "unwritten_blocks": [[0, 1]],
    "type": "IndexError", "total": 12, "mismatches": 3, "text": "x = (", "stress_case": "M=64",
    "seed": 1, "rtol": 1e-6, "mode_passing": "on_wait", "max_rel_error": 0.1, "max_abs_error": 0.2,
    "grid_point": [0, 1], "found": ["other"], "fills_failing": ["nan"], "file": "add.py", "expected": "add.py",
    "exit": "signal 9", "effective_bits": 3.0, "dtype_bits": 24, "differing": 3, "debug": "debug text",
    "cores": 2, "switch": "pltpu.InterpretParams(detect_races=True)", "behaviour": "goes on",
    "atol": 1e-6, "uploaded": ["a.py"], "unwritten_count": 1, "technique": "manual-dma",
    "stress": "long-k", "signature": "(x)", "scratch": [{"shape": [8, 128], "dtype": "float32", "bytes": 4096}],
    "scoped": [], "rule": "block tiling", "right_in_order": True, "relative_to_output": 0.5, "reason": "why",
    "production_dtype": "float32", "production_dims": {"M": 4096}, "phase": "run", "order_length": 4,
    "order": [[[0, 0], 0], [[0, 1], 1]], "not_run": False, "more_uploaded": False, "mode_failing": "eager",
    "memory_mb": 600, "limit_bytes": 1 << 20, "lax": "lax text", "jit": "jit text",
    "grid_points": [[0, 0], [0, 1]], "grid": [2, 2], "generic_passed": True,
    "first_mismatches": [[0, 1]], "element_range": [[0, 8], [128, 256]], "disk_mb": 100,
    "dimension_semantics": ["parallel"], "count": 1, "compiler_message": "compiler text", "chip": "v5e",
    "bytes": 1 << 21, "blocks": [{"operand": "input 0", "shape": [8, 128], "dtype": "float32", "buffers": 2,
                                   "buffering": "double buffering", "bytes": 8192}],
    "block_grid": [2, 2], "array_shape": [16, 256], "operation": "sort", "headline": "h", "rule_id": "lowering",
    "variant": "v", "test_rung": "generic", "interpret_params": {"random_seed": 1},
    "partial_inputs": [{"operand": "input 0", "axes": [1], "array_shape": [256, 384], "block_shape": [128, 256]}],
    "wrong_padded": 3, "wrong": 5,
    "programs": [{"kernel": 1, "sizes": ["small (M=16, N=256, float32)"], "more": 0},
                 {"kernel": 2, "sizes": ["a secret case"], "more": 2}],
}


def _fields(finding_id: str) -> set[str]:
    text = (TEMPLATES / f"{finding_id}.j2").read_text()
    return set(re.findall(r"\bx\.([a-z_]+)", text)) | {"mismatches", "total"}


def _problems(finding_id: str) -> list[str]:
    text = (TEMPLATES / f"{finding_id}.j2").read_text()
    named = re.findall(r'problem == "([a-z-]+)"', text)
    for group in re.findall(r"problem in \(([^)]*)\)", text):
        named += re.findall(r'"([a-z-]+)"', group)
    return [""] + sorted(set(named))


CASES = [(fid, problem) for fid in sorted(CATALOGUE) for problem in _problems(fid)]


def _finding(finding_id: str, problem: str, marker: bool) -> Finding:
    fields = _fields(finding_id) - {"problem"}
    evidence = {k: (f"LEAK-{k}" if marker and isinstance(VALUES.get(k, ""), str) else VALUES.get(k, f"v-{k}"))
                for k in fields}
    if problem:
        evidence["problem"] = problem
    return Finding.make(finding_id, "static" if finding_id in ("compile-reject", "vmem-overflow") else "generic",
                        f"LEAK-message {finding_id}", case="secret-case", **evidence)


@pytest.mark.parametrize("fmt", ["text", "md", "html"])
@pytest.mark.parametrize("finding_id,problem", CASES)
def test_every_finding_renders_for_a_visible_and_a_secret_case(finding_id, problem, fmt):
    for visible in (True, False):
        f = _finding(finding_id, problem, marker=not visible)
        out = render.render(f"findings/{finding_id}.j2", fmt, fd=render._finding_view(f, visible))
        assert out.strip(), (finding_id, problem, visible)
        if not visible:
            # Withheld facts and the message (which quotes what the tracer named) never show.
            leaked = [m for m in re.findall(r"LEAK-(\w+)", out) if m not in render._HIDDEN_SAFE]
            assert not leaked, (finding_id, problem, leaked)


@pytest.mark.parametrize("fmt", ["text", "md", "html"])
@pytest.mark.parametrize("problem", ["probe-run-hung", "probe-run-raised"])
def test_a_probe_run_that_hung_or_raised_renders_for_a_visible_and_a_secret_case(problem, fmt):
    # What test.j2 shows instead of the ID's own template (a check's run that broke
    # where the test passed has none of that template's evidence).
    for fid in ("uninitialized-memory", "grid-order-dependence", "data-race", "dma-protocol", "wrong-result"):
        for visible in (True, False):
            f = Finding.make(fid, "tpu-interpret", "LEAK-message", case="secret-case", check="races", problem=problem,
                             limit_s=10.0, type="ValueError", phase="run", variant="v")
            out = " ".join(render.render("findings/_probe_run_broke.j2", fmt,
                                         fd=render._finding_view(f, visible)).split())   # text wraps prose
            assert ("did not finish within 10 s" if problem == "probe-run-hung" else "raised ValueError") in out
            assert "LEAK" not in out
