"""Starting the child, enforcing its limits, and collecting what it reports.

The child runs as the student user (see ``confinement``), in its own session,
with a wall-clock deadline for start-up and for each run (never past the
global deadline), CPU-time, file-size, process-count and core limits, a
resident-memory ceiling measured over every process in its session, and
``oom_score_adj`` 1000 so that a spike the poll misses kills the child, not
the grader. Its stdout/stderr are pipes drained here and kept only as a capped
tail: student output is data for the feedback, never protocol. Events arrive
on a separate inherited pipe and must follow the protocol (start, then done,
for the run the child was given) or the child is stopped as tampered with.
A run that times out, runs out of memory or dies takes only itself down: the
parent starts a fresh child for the runs after it. After every child, every
process it started is killed, wherever it went.
"""
from __future__ import annotations

import json
import os
import resource
import select
import signal
import stat
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from .confinement import TEMP_FOLDERS, Identity, give_to, kill_leftovers, popen_kwargs, proc_stats, tasks_of

POLL_S = 0.1   # also the memory sampling period: a /proc scan costs ~2 ms
OUTPUT_FILE_LIMIT = 64 * 1024 * 1024   # per file the child writes
OUTPUT_TAIL = 4000                     # characters of student output kept for feedback
MAX_TIMEOUTS = 2                       # after this many, the remaining runs are not tried
MAX_PROCESSES = 1024                   # RLIMIT_NPROC for the student user (XLA threads count)
DISK_LIMIT_MB = 1024                   # what the student's files may take, in all
MAX_STUDENT_FILES = 20_000             # and how many there may be (each costs the scan)
DISK_POLLS = 5                         # the files are measured every 5th poll (0.5 s)


def student_disk(identity: Identity, workdir: Path) -> tuple[int, int]:
    """(bytes, files) the student user has written: its own folders in the
    working directory, and (when it is a user of its own) what it owns in the
    shared temp folders. Free space is no measure: other processes on the
    machine (another grading) write too."""
    roots = [workdir / "home", workdir / "out"]
    if identity.dropped:
        roots += [Path(t) for t in TEMP_FOLDERS]
    total = files = 0
    stack = []
    for root in roots:
        try:
            stack += [e for e in os.scandir(root)]
        except OSError:
            continue
    while stack and files <= MAX_STUDENT_FILES:
        entry = stack.pop()
        try:
            st = entry.stat(follow_symlinks=False)
            if identity.dropped and st.st_uid != identity.uid:
                continue
            files += 1
            total += st.st_blocks * 512
            if stat.S_ISDIR(st.st_mode):
                stack += list(os.scandir(entry.path))
        except OSError:
            continue
    return total, files


@dataclass
class RunOutcome:
    """What happened to one run (one case on one rung)."""
    status: str                   # ok | error | bad-type | timeout | memory | disk | died | load-error | skipped
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
    output_bytes: int = 0         # everything the student printed, before the cap
    leftovers_killed: int = 0     # processes still alive after a child, killed
    tampered: str = ""            # why the event channel was judged forged
    confinement: "Identity | None" = None


def read_output(outcome: RunOutcome, out_dir: Path) -> "np.ndarray | str":
    """The array a run saved, or why it cannot be read. Only a plain file
    inside ``out_dir`` is read (not a link, FIFO or hard link to another
    file: the student user owns that folder), and never with pickle."""
    import numpy as np
    path = Path(outcome.event.get("file", ""))
    if outcome.status != "ok" or path.parent.resolve() != out_dir.resolve():
        return "the output file was not where the grader put it"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as e:
        return f"the output could not be read back ({type(e).__name__})"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or st.st_size > OUTPUT_FILE_LIMIT:
            return "the output file was replaced by something that is not the grader's file"
        with os.fdopen(fd, "rb") as f:
            fd = -1
            return np.load(f, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        return f"the output could not be read back ({type(e).__name__})"
    finally:
        if fd >= 0:
            os.close(fd)


def _session_rss_kb(sid: int) -> int:
    """Resident memory of every process whose session is ``sid`` (Linux /proc)."""
    pages = 0
    for _pid, fields in proc_stats():
        try:
            if int(fields[3]) == sid:       # field 6 of stat: session id; field 24: rss
                pages += int(fields[21])
        except (ValueError, IndexError):
            continue
    return pages * (os.sysconf("SC_PAGE_SIZE") // 1024)


class Tail:
    """The last OUTPUT_TAIL bytes of a stream, and how much there was in all."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.data += chunk
        if len(self.data) > 2 * OUTPUT_TAIL:
            del self.data[:-OUTPUT_TAIL]

    def text(self) -> str:
        text = bytes(self.data[-OUTPUT_TAIL:]).decode("utf-8", "replace")
        if self.total > len(text.encode("utf-8", "replace")):
            return f"[... {self.total - OUTPUT_TAIL} earlier bytes of output cut ...]\n" + text
        return text


def _limiter(cpu_s: int, nproc: int):
    def limit_child() -> None:
        # Runs in the child after the switch to the student user, before exec.
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (OUTPUT_FILE_LIMIT, OUTPUT_FILE_LIMIT))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 5))
        # Counted per real user: on a shared user (no root) what it already runs is added.
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        try:
            with open("/proc/self/oom_score_adj", "w") as f:
                f.write("1000")
        except OSError:
            pass
    return limit_child


def child_env(home: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k in ("PATH", "LANG", "LC_ALL", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    if home:
        env.update({"HOME": home, "TMPDIR": home})
    env.update({
        "JAX_PLATFORMS": "cpu",
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
    })
    return env


# What the child needs to know of a run. Case names, probe names and variants
# stay in the parent: the student's code can read its job file, and must learn
# neither the hidden cases' names nor which runs are probes.
CHILD_RUN_KEYS = ("kind", "analysis", "rung", "params", "fill", "record", "races", "capture",
                  "inputs", "id_file")


def child_runs(runs: list[dict]) -> tuple[list[dict], dict[str, str]]:
    """The runs as the child sees them (opaque ids), and opaque id -> real id."""
    cases: dict[str, str] = {}
    out, alias = [], {}
    for i, r in enumerate(runs):
        opaque = f"r{i}"
        alias[opaque] = r["id"]
        out.append({"id": opaque, "case": cases.setdefault(r["case"], f"c{len(cases)}"),
                    **{k: r[k] for k in CHILD_RUN_KEYS if k in r}})
    return out, alias


class _Child:
    def __init__(self, workdir: Path, job: dict, index: int, identity: Identity, cpu_s: int,
                 nproc: int, stdout: Tail, stderr: Tail):
        job_path = workdir / f"job{index}.json"
        runs, self.alias = child_runs(job["runs"])
        job_path.write_text(json.dumps({**job, "runs": runs}), encoding="utf-8")
        os.chmod(job_path, 0o644)
        read_fd, write_fd = os.pipe()
        self.identity = identity
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-m", "autograder.child", str(job_path), str(write_fd)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=workdir,
            env=child_env(str(workdir / "home")), pass_fds=(write_fd,), start_new_session=True,
            preexec_fn=_limiter(cpu_s, nproc), **popen_kwargs(identity))
        os.close(write_fd)
        self.streams = {read_fd: None, self.proc.stdout.fileno(): stdout,
                        self.proc.stderr.fileno(): stderr}
        self.fd = read_fd
        self.buf = b""
        self.garbage = 0
        self.eof = False

    def events(self, timeout: float) -> list[dict]:
        """Events that arrived within ``timeout`` seconds; student output is
        drained into its tails on the way (a flood never blocks the child)."""
        open_fds = [fd for fd in self.streams]
        if not open_fds:
            time.sleep(timeout)
            return []
        ready, _, _ = select.select(open_fds, [], [], timeout)
        events = []
        for fd in ready:
            chunk = os.read(fd, 1 << 16)
            tail = self.streams[fd]
            if not chunk:
                del self.streams[fd]
                if fd == self.fd:
                    self.eof = True
                continue
            if tail is not None:
                tail.add(chunk)
                continue
            self.buf += chunk
            *lines, self.buf = self.buf.split(b"\n")
            for line in lines:
                try:
                    ev = json.loads(line)
                except ValueError:
                    ev = None
                if isinstance(ev, dict):
                    if "run" in ev:   # back to the parent's id; an unknown one fails the protocol
                        ev["run"] = self.alias.get(str(ev["run"]), f"unknown run {str(ev['run'])[:40]!r}")
                    events.append(ev)
                else:
                    self.garbage += 1
        return events

    def finish(self) -> int:
        """Kill the child and everything it started; drain what it printed."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        killed = kill_leftovers(self.identity, self.proc.pid)
        deadline = time.monotonic() + 1.0
        while self.streams and time.monotonic() < deadline:
            self.events(0.05)
        for fd in list(self.streams):
            if fd == self.fd:
                os.close(fd)
        self.proc.stdout.close()
        self.proc.stderr.close()
        return killed


def _over_disk(identity: Identity, workdir: Path) -> bool:
    used, files = student_disk(identity, workdir)
    return used > DISK_LIMIT_MB * 2 ** 20 or files > MAX_STUDENT_FILES


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
             run_s: float, memory_mb: int, deadline: float, identity: Identity) -> ChildReport:
    """Run ``runs`` in as few children as possible, each under the limits.

    ``deadline`` is a ``time.monotonic()`` instant no run may go past: a run
    still going then is stopped and it and the remaining runs are reported as
    skipped, so the global time budget holds whatever the student does.
    """
    pending = list(runs)
    outcomes: dict[str, RunOutcome] = {}
    load_error = None
    jax_version = None
    children = 0
    peak_kb = 0
    killed = 0
    tampered = ""
    stdout, stderr = Tail(), Tail()
    give_to(workdir / "home", identity)
    cpu_s = int(max(30.0, deadline - time.monotonic()) * max(1, os.cpu_count() or 1))
    polls = 0
    nproc = MAX_PROCESSES + (0 if identity.dropped else tasks_of(identity.uid))
    while pending and load_error is None and not tampered:
        if time.monotonic() >= deadline:
            break
        stderr = Tail()
        child = _Child(workdir, {**base_job, "runs": pending}, children, identity, cpu_s,
                       nproc, stdout, stderr)
        children += 1
        current, phase_start, limit, phase = None, time.monotonic(), startup_s, "startup"
        failure: str | None = None
        try:
            while True:
                for ev in child.events(POLL_S):
                    kind = ev.get("event")
                    if kind == "jax" and phase == "startup":
                        jax_version = ev.get("version")
                    elif kind == "load" and ev.get("status") == "error" and phase == "startup":
                        load_error = ev
                    elif kind == "ready" and phase == "startup":
                        phase_start, limit, phase = time.monotonic(), run_s, "between"
                    elif kind == "start" and phase == "between" and ev.get("run") == pending[0]["id"]:
                        current = ev.get("run")
                        limit = pending[0].get("timeout_s", run_s)
                        phase_start, phase = time.monotonic(), "run"
                    elif kind == "done" and phase == "run" and ev.get("run") == current:
                        outcomes[current] = RunOutcome(ev.get("status", "error"), ev,
                                                       float(ev.get("seconds", 0.0)))
                        pending = [r for r in pending if r["id"] != current]
                        current, phase_start, phase = None, time.monotonic(), "between"
                    elif kind == "finished" and phase == "between" and not pending:
                        pass
                    else:
                        # No run id in the text: it is shown to the student, and a
                        # hidden case's name is not theirs to see.
                        tampered = (f"an event out of protocol ({str(kind)[:40]!r} while "
                                    f"{'a run was in progress' if current else phase})")
                if child.garbage and not tampered:
                    tampered = "lines that are not grader events were written to the grader's channel"
                rss = _session_rss_kb(child.proc.pid)
                peak_kb = max(peak_kb, rss)
                polls += 1
                if tampered:
                    failure = "tampered"
                elif rss > memory_mb * 1024:
                    failure = "memory"
                elif polls % DISK_POLLS == 0 and _over_disk(identity, workdir):
                    failure = "disk"
                elif time.monotonic() - phase_start > limit:
                    failure = "timeout"
                elif time.monotonic() >= deadline:
                    failure = "budget"
                elif child.proc.poll() is not None and child.eof:
                    failure = None if not pending or load_error else "died"
                if failure or (child.eof and child.proc.poll() is not None):
                    break
        finally:
            killed += child.finish()
        if failure in ("tampered", "budget"):
            if failure == "budget" and current is not None:
                outcomes[current] = RunOutcome("skipped", {"run": current, "budget": True})
            break
        if failure and load_error is None:
            detail = {"phase": phase, "limit_s": limit, "memory_mb": memory_mb,
                      "disk_mb": DISK_LIMIT_MB,
                      "returncode": child.proc.returncode, "stderr_tail": stderr.text()[-1500:]}
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
        outcomes.setdefault(r["id"], RunOutcome("load-error" if load_error else "skipped",
                                                {"budget": not load_error and not tampered}))
    return ChildReport(outcomes, load_error, jax_version, stdout.text(), children,
                       peak_kb / 1024, output_bytes=stdout.total, leftovers_killed=killed,
                       tampered=tampered, confinement=identity)
