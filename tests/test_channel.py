"""The parent's side of the channel (no JAX): events and output files checked."""
import json
import os

import numpy as np
import pytest

from autograder.isolation import channel


def test_event_reader_splits_lines_and_counts_garbage():
    r = channel.EventReader()
    assert r.feed(b'{"event": "ready"}\n{"event": "st') == [{"event": "ready"}]
    assert r.feed(b'art", "run": "r0"}\nnot json\n[1, 2]\n') == [{"event": "start", "run": "r0"}]
    assert r.garbage == 2


def test_an_endless_line_is_garbage_not_memory():
    r = channel.EventReader()
    r.feed(b"x" * (channel.MAX_EVENT_BYTES + 10))
    assert r.garbage == 1 and r.buf == b""


def _done(tmp_path, arr, **ev):
    np.save(tmp_path / "r0.npy", arr, allow_pickle=False)
    return {"event": "done", "run": "r0", "status": "ok", "file": "r0.npy", "dtype": str(arr.dtype),
            "shape": list(arr.shape), "seconds": 0.5, **ev}


def test_an_ok_output_is_read_at_once(tmp_path):
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    o = channel.outcome(_done(tmp_path, arr), tmp_path, (2, 3))
    assert o.ok and o.seconds == 0.5 and np.array_equal(o.output, arr) and o.shape == (2, 3)


@pytest.mark.parametrize("tamper,problem", [
    (lambda p: (os.unlink(p), os.symlink("/etc/passwd", p)), "could not be read back"),
    (lambda p: (os.unlink(p), os.mkfifo(p)), "not the grader's file"),
    (lambda p: os.link(p, p.parent / "other.npy"), "not the grader's file"),
    (lambda p: p.write_bytes(b"\x93NUMPY garbage"), "could not be read back"),
    (lambda p: np.save(p, np.array(["a", "b"]), allow_pickle=False), "numeric array"),
    (lambda p: np.save(p, np.zeros((3, 3), np.float32)), "does not match the shape"),
])
def test_outputs_that_are_not_the_graders_file_are_not_read(tmp_path, tamper, problem):
    ev = _done(tmp_path, np.zeros((2, 3), np.float32))
    tamper(tmp_path / "r0.npy")
    o = channel.outcome(ev, tmp_path, (2, 3))
    assert o.output is None and problem in o.output_problem


@pytest.mark.parametrize("name", ["../r0.npy", "/tmp/r0.npy", "sub/r0.npy", "r0.txt", 7])
def test_output_names_outside_the_folder_are_refused(tmp_path, name):
    ev = _done(tmp_path, np.zeros((2, 3), np.float32), file=name)
    o = channel.outcome(ev, tmp_path, (2, 3))
    assert o.output is None and "not where the grader put it" in o.output_problem


def test_a_wrong_shape_is_reported_without_reading(tmp_path):
    ev = _done(tmp_path, np.zeros((4, 4), np.float32))
    o = channel.outcome(ev, tmp_path, (2, 3))
    assert o.output is None and o.shape == (4, 4) and o.output_problem == "wrong shape"


def test_event_fields_are_typed_and_capped(tmp_path):
    ev = {"status": "error", "type": "IndexError" * 100, "message": "m" * 10_000,
          "frames": ["f"] * 50 + [7], "phase": "run", "order": [[[0, 1], 0], "junk", [[2], "x"]],
          "races_found": "yes", "captured": 5}
    o = channel.outcome(ev, tmp_path, None)
    assert o.status == "error" and len(o.error_type) == 200 and len(o.message) == 4000
    assert len(o.frames) == 8 and o.order == (((0, 1), 0),) and o.races_found is False and o.captured == ""
    assert channel.outcome({"status": "maybe"}, tmp_path, None).error_type == "ProtocolError"


def test_load_errors_are_typed():
    e = channel.load_error({"kind": "rm -rf", "type": "X", "line": True, "found": ["a", 3]})
    assert e.kind == "import" and e.line is None and e.found == ("a",)
    assert channel.load_error(json.loads('{"kind": "syntax", "line": 4}')).line == 4


def test_static_facts_are_decoded_into_typed_objects_and_checked(tmp_path):
    from autograder.pallas_surface.static import facts
    ev = {"status": "ok", "facts": {"pallas_calls": 1, "outside": {"add": 2}, "manual_dma": False,
                                    "kernel_primitives": ["add", "get", "swap"]}}
    o = channel.outcome(ev, tmp_path, None, "structure")
    assert o.facts == facts.Structure(1, {"add": 2}, False, ("add", "get", "swap"))
    compiled = channel.outcome({"status": "ok", "facts": {"ok": True}}, tmp_path, None, "compile").facts
    assert compiled == facts.Compile(True)
    for bad, why in [({"ok": "yes"}, "compile.ok: must be a bounded bool"),
                     ({"ok": True, "extra": 1}, "unknown field 'extra'"),
                     ({"ok": False, "message": "x" * 30_000}, "compile.message: must be a bounded str")]:
        with pytest.raises(facts.FactsError, match=why):
            channel.outcome({"status": "ok", "facts": bad}, tmp_path, None, "compile")
    with pytest.raises(facts.FactsError, match="field 'calls' is missing"):
        channel.outcome({"status": "ok", "facts": {"bytes": 3}}, tmp_path, None, "vmem")
    with pytest.raises(facts.FactsError, match="a kernel run reported facts"):
        channel.outcome({"status": "ok", "facts": {}}, tmp_path, (2, 3))
    # What decode reads, encode writes (calibration files keep the solution's schedule).
    s = facts.Structure(0, {}, True, ())
    assert facts.decode("structure", facts.encode(s)) == s
