"""A DMA wait on the other slot's semaphore (issue 45's k09, written apart from the
project: assignments/dma_scale/corpus/dma_wrong_semaphore.py), graded through the
real CLI: the hang (test 1.2) and the race (test 2.2) are one problem, at the wait's
line, with the fix the traced kernel calls for; a replay of test 2.2 alone, as a
student copies it from Gradescope, keeps its number, its line and its fix."""
import re

import pytest
from conftest import corpus, tags

pytestmark = [pytest.mark.jax, pytest.mark.grading]

KERNEL = corpus("dma_scale") / "dma_wrong_semaphore.py"
AT = ("At dma_wrong_semaphore.py:35:\n\n```\npltpu.make_async_copy(x_hbm.at[pl.ds(c * CHUNK, CHUNK)], buf.at[slot], "
      "sem.at[1 - slot]).wait()\n```")
FIX = ("Fix: wait on the semaphore the copy was started with: the .wait() waits on sem[1] for the copy into buf[0], "
       "which was started on sem[0] at dma_wrong_semaphore.py:30.")


def _test(doc: dict, number: str) -> dict:
    return next(t for t in doc["tests"] if t["number"] == number)


@pytest.mark.releases
def test_the_hang_and_the_race_are_one_problem_at_the_wait_with_the_semaphore_fix(grade_cli):
    doc, out = grade_cli(KERNEL, "dma_scale", "--run-key", "5")
    assert tags(doc) == [[], ["dma-protocol"]] * 4 and doc["score"] == 11
    first = _test(doc, "1.2")
    assert first["extra_data"]["problem"] == "hang"
    assert AT in first["output"] and FIX in first["output"]
    assert "start every copy before waiting" not in first["output"]
    # Test 2.2 is the same problem, explained under 1.2 (its replay command: the next test).
    assert _test(doc, "2.2")["output"].startswith("Problem 1, DMA or semaphore misuse [dma-protocol], explained "
                                                  "under test 1.2")
    assert "Problems found: 1" in out
    assert re.search(r"Fix: wait on the semaphore the copy was started with: the \.wait\(\) waits on\s+sem\[1\]", out)


def test_a_replay_of_test_2_2_keeps_its_number_line_and_fix(grade_cli):
    doc, out = grade_cli(KERNEL, "dma_scale", "--case", "f32-256x128", "--rung", "tpu-interpret",
                         "--run-key", "5")
    (replayed,) = [t for t in doc["tests"] if re.fullmatch(r"\d+\.\d+", t["number"])]
    assert (replayed["number"], replayed["tags"], replayed["extra_data"]["problem"]) == \
        ("2.2", ["dma-protocol"], "mode-dependent")
    assert AT in replayed["output"] and FIX in replayed["output"]
    assert "call .wait() on the copy before reading" not in replayed["output"]


@pytest.mark.releases
def test_a_prefetch_into_the_slot_in_use_is_one_race_problem_at_the_copys_start(grade_cli):
    # The race detector sees the copy's write race the read that stores the output
    # (tests n.2); the fill reruns see output from the slot never filled (tests n.1):
    # one problem, explained once, with the slot and both lines; the points stay.
    doc, out = grade_cli(corpus("dma_scale") / "prefetch_into_slot_in_use.py", "dma_scale", "--run-key", "5")
    assert tags(doc) == [["uninitialized-memory"], ["data-race"]] * 4 and doc["score"] == 6
    listed = " ".join(out.split())
    assert "Problems found: 1 " in listed and "1. Data race [data-race]: cost 10 points in tests 1.1, 1.2, 2.1, " \
        "2.2, 3.1, 3.2, 4.1, 4.2." in listed
    race = " ".join(_test(doc, "1.2")["output"].split())
    assert "At prefetch_into_slot_in_use.py:28: ``` copy(c + 1, cur, nxt).start() ```" in race
    assert ("Fix: the kernel reads the same buffer (slot 1, elements [0:64, 0:256]) at line 30 (the copy started at "
            "line 28) while a DMA into it is still in flight: copy into a buffer (a slot) nothing reads until that "
            "copy's .wait(), e.g. prefetch into the other slot, or wait on the copy before reading.") in race
    # The switch as the detector ran it (a kernel without a grid: one core).
    assert re.search(r"pltpu\.InterpretParams\(detect_races=True[^)]*\) with num_cores_or_threads=1:", race)
    fills = " ".join(_test(doc, "1.1")["output"].split())
    assert "Problem 1, Data race [data-race], explained under test 1.2; seen here as depends on uninitialized " \
        "memory [uninitialized-memory]" in fills
    assert "accumulator" not in fills and "program_id" not in fills


@pytest.mark.releases
def test_a_prefetch_started_in_the_slot_in_use_and_waited_for_in_the_other_is_fixed_at_its_start(grade_cli):
    # The copy of chunk c + 1 goes into slot c % 2 (still being read) and is waited for in slot
    # (c + 1) % 2: TPU interpret mode hangs, the generic interpreter reads the overwritten chunk.
    # One problem, at the copy's start, with the slots in the student's names; the generic test
    # that explains it says what it saw itself.
    doc, out = grade_cli(corpus("dma_scale") / "prefetch_waited_in_other_slot.py", "dma_scale", "--run-key", "5")
    assert doc["score"] == 6.0 and tags(doc) == [["dma-protocol"]] * 8
    first = " ".join(_test(doc, "1.1")["output"].split())
    assert "At prefetch_waited_in_other_slot.py:29: ``` copy(c + 1, slot).start() ```" in first
    assert ("Fix: start each copy into the slot its wait names: the copy of x_hbm[64:128] is started into buf[0] at "
            "prefetch_waited_in_other_slot.py:29, but the .wait() at prefetch_waited_in_other_slot.py:30 waits for it "
            "in buf[1], where it was never started; start it into buf[1]") in first
    assert "Seen on this test as wrong result [wrong-result]: 49152 of 49152 outputs are wrong" in first
    assert "Problems found: 1 " in " ".join(out.split())


@pytest.mark.releases
def test_a_loops_wait_on_the_next_slots_semaphore_is_fixed_at_its_wait(grade_cli):
    # A fori_loop's indices are traced values (c % 2, 1 - slot): the grader evaluates the loop's
    # integer arithmetic step by step to see the wait name sems[1] for the copy started on sems[0].
    doc, out = grade_cli(corpus("dma_scale") / "fori_wait_on_next_slot_semaphore.py", "dma_scale", "--run-key", "5")
    assert doc["score"] == 11.0 and tags(doc) == [[], ["dma-protocol"]] * 4
    first = " ".join(_test(doc, "1.2")["output"].split())
    assert "At fori_wait_on_next_slot_semaphore.py:38: ``` fetch(c, slot, sems.at[next_slot]).wait() ```" in first
    assert ("Fix: wait on the semaphore the copy was started with: the .wait() waits on sems[1] for the copy into "
            "buf[0], which was started on sems[0] at fori_wait_on_next_slot_semaphore.py:28.") in first
    assert "start every copy before waiting" not in first
    assert "Problems found: 1 " in " ".join(out.split())


def test_the_last_copy_never_waited_on_is_named_at_its_start(grade_cli):
    # The wait is indented under the prefetch's `if`: the last chunk's copy is started and never
    # waited on (the sixth read's kernel). Right with 'eager', wrong with 'on_wait': one problem
    # whose fix names that copy at its start, not the general "wait before reading".
    doc, out = grade_cli(corpus("dma_scale") / "last_copy_never_waited.py", "dma_scale", "--run-key", "5")
    assert doc["score"] == 11.0 and tags(doc) == [[], ["dma-protocol"]] * 4
    first = " ".join(_test(doc, "1.2")["output"].split())
    assert "At last_copy_never_waited.py:30: ``` dma(c + 1, nxt).start() ```" in first
    assert ("Fix: wait on every copy you start, once, before its destination is read: the copy of x_hbm[128:192] "
            "into bufs[0] started at last_copy_never_waited.py:30 is never waited on.") in first
    assert "Problems found: 1 " in " ".join(out.split())
