"""Child exits read truthfully: reaping never steals a status; a death before JAX is the grader's (no JAX here).

A blanket ``waitpid(-1)`` in the grader collected the tracer's zombie before
``Popen.poll`` did, and Popen then reported exit code 0 for a submission that
died with ``os._exit(3)`` (a CI failure that came and went with timing)."""
import subprocess
import sys
import time

from autograder.isolation import confinement


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


def test_a_child_that_dies_before_loading_jax_is_the_graders_failure(tmp_path):
    # No student code runs before the child reports JAX loaded: a death that
    # early (a broken install here, a module that does not exist) is never
    # charged to the student as "ended abruptly".
    import os
    import time as _time

    import pytest

    from autograder.isolation import sandbox
    me = confinement.Identity(os.getuid(), os.getgid(), "grader", False)
    home = tmp_path / "home"
    home.mkdir()
    spec = sandbox.ChildSpec("autograder.no_such_module", {}, me, home, (home,), 30.0, 600)
    supervisor = sandbox.Supervisor(spec, _time.monotonic() + 60, sandbox.Tail())
    with pytest.raises(sandbox.GraderFailure, match="(?s)before it loaded JAX.*No module named"):
        supervisor.ready()
    assert supervisor.child is None
