"""Reaping orphans never steals a grader child's exit status (no JAX).

A blanket ``waitpid(-1)`` in the grader collected the tracer's zombie before
``Popen.poll`` did, and Popen then reported exit code 0 for a submission that
died with ``os._exit(3)`` (a CI failure that came and went with timing)."""
import subprocess
import sys
import time

from autograder import confinement


def _wait_zombie(pid: int) -> None:
    for _ in range(500):
        if any(p == pid and f[0] == "Z" for p, f in confinement.proc_stats()):
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} never became a zombie")


def test_reaping_leaves_the_graders_own_children_to_popen():
    proc = subprocess.Popen([sys.executable, "-c", "import os; os._exit(3)"])
    confinement.own_child(proc.pid)
    try:
        _wait_zombie(proc.pid)
        confinement._reap()
        assert proc.poll() == 3
    finally:
        confinement.own_child(proc.pid, alive=False)


def test_reaping_collects_zombies_nobody_waits_for():
    proc = subprocess.Popen([sys.executable, "-c", "import os; os._exit(5)"])
    _wait_zombie(proc.pid)
    confinement._reap()
    assert not any(p == proc.pid for p, _ in confinement.proc_stats())
    proc.returncode = 0       # already collected: keep Popen's destructor quiet
