"""The child's view of its job, and the capped output tail (pure logic, no JAX)."""
import json

from autograder import sandbox


def test_the_child_learns_neither_case_names_nor_which_runs_are_probes():
    runs = [
        {"id": "hidden-secret/generic", "id_file": "0", "case": "hidden-secret", "rung": "generic",
         "params": {}, "inputs": [{"kind": "array", "file": "/w/in/0_0.npy", "dtype": "float32"}]},
        {"id": "small/poisoning/fill-zero", "id_file": "p1", "case": "small", "rung": "tpu-interpret",
         "probe": "poisoning", "variant": "fill-zero", "fill": "zero", "timeout_s": 5, "inputs": []},
        {"id": "small/tpu-interpret", "id_file": "2", "case": "small", "rung": "tpu-interpret",
         "params": {}, "inputs": []},
    ]
    seen, alias = sandbox.child_runs(runs)
    text = json.dumps(seen)
    for secret in ("hidden-secret", "small", "poisoning", "fill-zero", "timeout_s", "variant"):
        assert secret not in text
    assert [r["id"] for r in seen] == ["r0", "r1", "r2"]
    assert [r["case"] for r in seen] == ["c0", "c1", "c1"]      # runs of one case share a trace
    assert seen[1]["fill"] == "zero" and seen[0]["inputs"] == runs[0]["inputs"]
    assert alias == {"r0": runs[0]["id"], "r1": runs[1]["id"], "r2": runs[2]["id"]}


def test_the_output_tail_keeps_the_end_and_says_what_was_cut():
    tail = sandbox.Tail()
    for i in range(10_000):
        tail.add(f"line {i}\n".encode())
    text = tail.text()
    assert text.endswith("line 9999\n") and "earlier bytes of output cut" in text
    assert len(text) < sandbox.OUTPUT_TAIL + 100 and tail.total == sum(len(f"line {i}\n") for i in range(10_000))
    short = sandbox.Tail()
    short.add(b"hello\n")
    assert short.text() == "hello\n"
