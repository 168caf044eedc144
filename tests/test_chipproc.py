"""The chip worker and its parent (autograder/tpu/chip/worker.py, chipproc.py) with real
processes: every way a job can end on a chip (an answer, an error, a halt of the core,
a hang, the process dying) is told apart, and the next job gets a working process.

The jobs are tests/chipjobs/faults.py, run in workers on JAX's CPU backend (the
worker's machinery is the same on a TPU; what a v5e raised is copied into them)."""
from __future__ import annotations

import time

import pytest

from autograder.tpu.chip import chipproc
from autograder.tpu.chip.chipproc import ChipWorker, Limits

pytestmark = pytest.mark.jax
FAST = Limits(open_s=120.0, compile_s=60.0, call_s=3.0, host_s=20.0, job_s=60.0)


@pytest.fixture
def worker():
    w = ChipWorker("cpu", FAST)
    w.open()
    yield w
    w.close()


def test_a_job_answers_with_its_result_and_progress(worker):
    seen = []
    o = worker.call("tests.chipjobs.faults:answer", {"x": 5}, seen.append)
    assert (o.status, o.result) == ("result", {"kind": "cpu", "echo": 5})
    assert seen == [{"phase": "call", "step": 1}] and worker.info["kind"] == "cpu"
    assert worker.call("tests.chipjobs.faults:answer", {"x": 6}).result["echo"] == 6   # the same process again


def test_an_error_is_the_jobs_answer_and_the_worker_goes_on(worker):
    o = worker.call("tests.chipjobs.faults:raises", {})
    assert o.status == "error" and o.message == "ValueError: a bad argument, said by the job"
    assert worker.alive and worker.call("tests.chipjobs.faults:answer", {}).status == "result"


def test_a_halt_of_the_core_ends_the_worker_with_the_chips_message(worker):
    o = worker.call("tests.chipjobs.faults:halts", {})
    assert o.status == "halt" and "RuntimeUnexpectedCoreHalt: BoundsCheck" in o.message
    assert o.phase == {"phase": "call", "size": "speed"}
    time.sleep(0.5)
    assert not worker.alive                     # its TPU client would be dead: a fresh process takes over


def test_a_silent_call_is_a_hang_and_the_process_group_is_killed(worker):
    t0 = time.monotonic()
    o = worker.call("tests.chipjobs.faults:hangs", {})
    assert o.status == "hang" and 2.5 < time.monotonic() - t0 < 15
    assert "calls 3" in o.message and "killed" in o.message and not worker.alive


def test_each_phase_has_its_own_silence_limit(worker):
    o = worker.call("tests.chipjobs.faults:hangs_in_host_phase", {"seconds": 4.0})
    assert o.status == "result"                 # 4 s of host work is within host_s, past call_s


def test_a_worker_that_dies_is_told_apart_from_one_whose_core_halted(worker):
    o = worker.call("tests.chipjobs.faults:exits", {})
    assert o.status == "died" and "exit status 7" in o.message and "debug print" in o.tail
    w = ChipWorker("cpu", FAST)
    w.open()
    try:
        o = w.call("tests.chipjobs.faults:halts_in_its_last_words", {})
        assert o.status == "halt" and "nonzero value upon exit" in o.message
    finally:
        w.close()


def test_no_device_is_unavailable_with_the_reason():
    w = ChipWorker("gpu", FAST)
    with pytest.raises(chipproc.Unavailable, match="no GPU is visible"):
        w.open(retry_s=0)
    assert not w.alive


def test_the_stage_gives_a_halt_or_a_hang_to_its_submission_and_times_the_rest():
    """The `speed` verb's chip (tpu.command.Chip): one worker for the class; a submission
    that halts the core or hangs gets that outcome (its own status, the chip's words),
    and a fresh worker takes the next submission."""
    from autograder.tpu.command import Chip
    chip = Chip("cpu", FAST)
    try:
        first = chip.stage("a", {"x": 1}, None, job="tests.chipjobs.faults:answer")
        halted = chip.stage("b", {}, None, job="tests.chipjobs.faults:halts")
        hung = chip.stage("c", {}, None, job="tests.chipjobs.faults:hangs")
        after = chip.stage("d", {"x": 2}, None, job="tests.chipjobs.faults:answer")
    finally:
        chip.close()
    assert first == {"kind": "cpu", "echo": 1} and after == {"kind": "cpu", "echo": 2}
    assert halted["submission"] == "b" and halted["status"] == "chip-halt"
    assert "RuntimeUnexpectedCoreHalt: BoundsCheck" in halted["message"] and halted["seconds"] is None
    assert hung["status"] == "chip-hang" and "calls 3" in hung["message"]
    assert len(chip.opens) == 3 and chip.replaced == ["after b: halt", "after c: hang"]


def test_a_prestarted_worker_imports_first_and_opens_the_chip_only_when_asked():
    w = ChipWorker("cpu", FAST)
    w.prestart()
    time.sleep(0.5)
    assert w.alive and w.info is None               # started, the chip not opened yet
    try:
        info = w.open()
        assert info["kind"] == "cpu" and w.warm_s > 0
        assert w.call("tests.chipjobs.faults:answer", {"x": 3}).result == {"kind": "cpu", "echo": 3}
    finally:
        w.close()


def test_a_prestarted_worker_let_go_unopened_ends_cleanly():
    w = ChipWorker("cpu", FAST)
    w.prestart()
    w.close()
    assert not w.alive and w._proc.returncode == 0


def test_fresh_process_gives_each_submission_its_own_prestarted_process():
    """`speed --fresh-process`: every submission a process of its own; the next one has imported JAX
    and the stage while the last held the chip, and opens it once that one has ended."""
    from autograder.tpu.command import Chip
    chip = Chip("cpu", FAST, fresh=True)
    try:
        pids = [chip.stage(s, {}, None, job="tests.chipjobs.faults:pid")["pid"] for s in "abc"]
        assert chip.next is not None and chip.next.alive and chip.next.info is None   # warm, not opened
        waiting = chip.next
    finally:
        chip.end()
    assert len(set(pids)) == 3 and len(chip.opens) == 3
    assert not waiting.alive and chip.next is None
