"""Starting the child, enforcing its limits, and collecting what it reports.

The child runs in its own session (so the whole process group can be killed),
with a wall-clock deadline for start-up and for each run, a resident-memory
ceiling measured over every process in its session, and file-size/core limits.
A run that times out, runs out of memory or dies takes only itself down: the
parent starts a fresh child for the runs after it.
"""
from __future__ import annotations

import json
import os
import resource
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

POLL_S = 0.1   # also the memory sampling period: a /proc scan costs ~2 ms
OUTPUT_FILE_LIMIT = 64 * 1024 * 1024   # per file the child writes (stdout floods stop here)
OUTPUT_TAIL = 4000                     # characters of student output kept for feedback
MAX_TIMEOUTS = 2                       # after this many, the remaining runs are not tried


@dataclass
class RunOutcome:
    """What happened to one run (one case on one rung)."""
    status: str                   # ok | error | bad-type | timeout | memory | died | load-error | skipped
    event: dict = field(default_factory=dict)
    seconds: float = 0.0


@dataclass
class ChildReport:
    outcomes: dict[str, RunOutcome]
    load_error: dict | None
    jax_version: str | None
    stdout_tail: str
    children: int                 # how many child processes were started
    peak_rss_mb: float


def read_output(outcome: RunOutcome, out_dir: Path) -> "np.ndarray | str":
    """The array a run saved, or why it cannot be read. Only files inside
    ``out_dir`` are read, and never with pickle."""
    import numpy as np
    path = Path(outcome.event.get("file", ""))
    if outcome.status != "ok" or path.resolve().parent != out_dir.resolve():
        return "the output file was not where the grader put it"
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        return f"the output could not be read back ({type(e).__name__})"


def _session_rss_kb(sid: int) -> int:
    """Resident memory of every process whose session is ``sid`` (Linux /proc)."""
    total = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read().decode("ascii", "replace")
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[3]) != sid:       # field 6 of stat: session id
                continue
            with open(f"/proc/{entry.name}/statm", "rb") as f:
                total += int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
        except (OSError, ValueError, IndexError):
            continue
    return total


def _kill_session(sid: int) -> None:
    try:
        os.killpg(sid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _tail(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - OUTPUT_TAIL))
            text = f.read().decode("utf-8", "replace")
        return ("[... earlier output cut ...]\n" + text) if size > OUTPUT_TAIL else text
    except OSError:
        return ""


def _limit_child() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (OUTPUT_FILE_LIMIT, OUTPUT_FILE_LIMIT))


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    env.update({
        "JAX_PLATFORMS": "cpu",
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
    })
    return env


class _Child:
    def __init__(self, workdir: Path, job: dict, index: int):
        job_path = workdir / f"job{index}.json"
        job_path.write_text(json.dumps(job), encoding="utf-8")
        read_fd, write_fd = os.pipe()
        self.out_path = workdir / f"stdout{index}.txt"
        self.err_path = workdir / f"stderr{index}.txt"
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-m", "autograder.child", str(job_path), str(write_fd)],
                stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=workdir,
                env=child_env(), pass_fds=(write_fd,), start_new_session=True,
                preexec_fn=_limit_child)
        os.close(write_fd)
        self.fd = read_fd
        self.buf = b""
        self.eof = False

    def events(self, timeout: float) -> list[dict]:
        """Events that arrived within ``timeout`` seconds (stops early on any)."""
        if self.eof:
            time.sleep(timeout)
            return []
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return []
        chunk = os.read(self.fd, 65536)
        if not chunk:
            self.eof = True
            return []
        self.buf += chunk
        *lines, self.buf = self.buf.split(b"\n")
        events = []
        for line in lines:
            try:
                ev = json.loads(line)
            except ValueError:
                continue  # only the child's own code writes here; ignore garbage
            if isinstance(ev, dict):
                events.append(ev)
        return events

    def finish(self) -> None:
        _kill_session(self.proc.pid)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        os.close(self.fd)


def _not_worth_running(runs: list[dict], pending: list[dict], outcomes: dict[str, RunOutcome],
                       timed_out: str) -> list[str]:
    """Pending runs that would hang like ``timed_out`` did, so are not started:
    probes rerunning TPU interpret mode on the same case, and every remaining run
    of a rung on which MAX_TIMEOUTS correctness runs already hung. Runs on other
    rungs still go ahead, and the global budget holds."""
    this = next(r for r in runs if r["id"] == timed_out)
    skip = []
    if this["rung"] == "tpu-interpret":
        skip += [r["id"] for r in pending if r.get("probe") and r["case"] == this["case"]
                 and r["rung"] == this["rung"]]
    same_rung = {r["id"] for r in runs if r["rung"] == this["rung"] and not r.get("probe")}
    if sum(o.status == "timeout" for k, o in outcomes.items() if k in same_rung) >= MAX_TIMEOUTS:
        skip += [r["id"] for r in pending if r["rung"] == this["rung"]]
    return skip


def run_jobs(workdir: Path, base_job: dict, runs: list[dict], *, startup_s: float,
             run_s: float, memory_mb: int, deadline: float) -> ChildReport:
    """Run ``runs`` in as few children as possible, each under the limits.

    ``deadline`` is a ``time.monotonic()`` instant after which no run starts:
    the remaining runs are reported as skipped, so the global time budget holds.
    """
    pending = list(runs)
    outcomes: dict[str, RunOutcome] = {}
    load_error = None
    jax_version = None
    children = 0
    peak_kb = 0
    stdout_tail = stderr_tail = ""
    while pending and load_error is None:
        if time.monotonic() >= deadline:
            break
        child = _Child(workdir, {**base_job, "runs": pending}, children)
        children += 1
        current, phase_start, limit, phase = None, time.monotonic(), startup_s, "startup"
        failure: str | None = None
        try:
            while True:
                for ev in child.events(POLL_S):
                    kind = ev.get("event")
                    if kind == "jax":
                        jax_version = ev.get("version")
                    elif kind == "load" and ev.get("status") == "error":
                        load_error = ev
                    elif kind == "ready":
                        phase_start, limit, phase = time.monotonic(), run_s, "between"
                    elif kind == "start":
                        current = ev.get("run")
                        limit = next((r.get("timeout_s", run_s) for r in pending if r["id"] == current), run_s)
                        phase_start, phase = time.monotonic(), "run"
                    elif kind == "done" and ev.get("run") == current:
                        outcomes[current] = RunOutcome(ev.get("status", "error"), ev,
                                                       float(ev.get("seconds", 0.0)))
                        pending = [r for r in pending if r["id"] != current]
                        current, phase_start, phase = None, time.monotonic(), "between"
                rss = _session_rss_kb(child.proc.pid)
                peak_kb = max(peak_kb, rss)
                if rss > memory_mb * 1024:
                    failure = "memory"
                elif time.monotonic() - phase_start > limit:
                    failure = "timeout"
                elif child.proc.poll() is not None and child.eof:
                    failure = None if not pending or load_error else "died"
                if failure or (child.eof and child.proc.poll() is not None):
                    break
                if time.monotonic() >= deadline and phase != "run":
                    break
        finally:
            child.finish()
        stdout_tail, stderr_tail = _tail(child.out_path), _tail(child.err_path)
        if failure and load_error is None:
            detail = {"phase": phase, "limit_s": limit, "memory_mb": memory_mb,
                      "returncode": child.proc.returncode, "stderr_tail": stderr_tail[-1500:]}
            if current is None:
                # Died or hung while starting or importing: every pending run shares the fate.
                load_error = {"kind": failure, "type": failure, "message": "", "frames": [], **detail}
                break
            outcomes[current] = RunOutcome(failure, {"run": current, **detail},
                                           time.monotonic() - phase_start)
            pending = [r for r in pending if r["id"] != current]
            for rid in _not_worth_running(runs, pending, outcomes, current):
                outcomes[rid] = RunOutcome("timeout", {"run": rid, "not_run": True, **detail})
            pending = [r for r in pending if r["id"] not in outcomes]
    for r in pending:
        outcomes.setdefault(r["id"], RunOutcome("load-error" if load_error else "skipped"))
    return ChildReport(outcomes, load_error, jax_version, stdout_tail, children,
                       peak_kb / 1024)
