"""Starting the child, feeding it runs, enforcing its limits, collecting outcomes.

The child runs as the student user (see ``confinement``), in its own session,
with CPU-time, file-size, process-count and core limits, a resident-memory
ceiling measured over every process in its session, ``oom_score_adj`` 1000 (a
spike the poll misses kills the child, not the grader), a wall clock for
start-up and one per run (never past the global deadline). Its stdout/stderr
are pipes drained here and kept only as a capped tail: student output is data
for the feedback, never protocol. Runs are sent one at a time over a command
pipe, so the ``Schedule`` can drop runs that outcomes already answered; events
come back on another pipe and must follow ``protocol``. One child serves the
whole grading unless a run kills it, hangs, or breaks a limit: then a fresh
child takes the runs after it. After every child, every process it started is
killed, wherever it went.
"""
from __future__ import annotations

import json
import os
import resource
import select
import signal
import stat
import subprocess
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import channel
from .confinement import (
    TEMP_FOLDERS,
    Identity,
    give_to,
    kill_escaped,
    kill_leftovers,
    popen_kwargs,
    proc_stats,
    python_command,
    tasks_of,
)
from .outcome import LoadError, Outcome
from .plan import Run
from .protocol import Protocol, Tampered
from .schedule import Schedule

POLL_S = 0.1                           # also the memory sampling period: a /proc scan costs ~2 ms
OUTPUT_TAIL = 4000                     # characters of student output kept for feedback
MAX_PROCESSES = 1024                   # RLIMIT_NPROC for the student user (XLA threads count)
DISK_LIMIT_MB = 1024                   # what the student's files may take, in all
MAX_STUDENT_FILES = 20_000             # and how many there may be (each costs the scan)
DISK_POLLS = 5                         # the files are measured every 5th poll (0.5 s)


@dataclass(frozen=True)
class ChildJob:
    """What every child of one grading is told at start (its job file)."""
    module_file: str
    module_dir: str
    module_name: str
    function: str
    arity: int
    out_dir: str


@dataclass
class Execution:
    """Everything the children of one grading reported, checked."""
    outcomes: dict[Run, Outcome]
    load_error: LoadError | None = None
    jax_version: str | None = None
    stdout_tail: str = ""
    children: int = 0                  # how many child processes were started
    peak_rss_mb: float = 0.0
    output_bytes: int = 0              # everything the student printed, before the cap
    leftovers_killed: int = 0          # processes still alive after a child, killed
    tampered: str = ""                 # why the event channel was judged forged
    startup_s: float = 0.0             # the first child's start-up (JAX and the submission imported)


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
            stack += list(os.scandir(root))
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
        resource.setrlimit(resource.RLIMIT_FSIZE, (channel.OUTPUT_FILE_LIMIT, channel.OUTPUT_FILE_LIMIT))
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


class Child:
    """One child process: its pipes, what it printed, and its protocol state."""

    def __init__(self, workdir: Path, job: ChildJob, index: int, identity: Identity, cpu_s: int,
                 nproc: int, stdout: Tail, stderr: Tail):
        job_path = workdir / f"job{index}.json"
        job_path.write_text(json.dumps(job.__dict__), encoding="utf-8")
        os.chmod(job_path, 0o644)
        ev_read, ev_write = os.pipe()
        cmd_read, cmd_write = os.pipe()
        self.identity = identity
        self.proc = subprocess.Popen(
            python_command("autograder.child", str(job_path), str(ev_write), str(cmd_read)),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=workdir,
            env=child_env(str(workdir / "home")), pass_fds=(ev_write, cmd_read), start_new_session=True,
            preexec_fn=_limiter(cpu_s, nproc), **popen_kwargs(identity))
        os.close(ev_write)
        os.close(cmd_read)
        self.commands = cmd_write
        self.streams = {ev_read: None, self.proc.stdout.fileno(): stdout, self.proc.stderr.fileno(): stderr}
        self.events_fd = ev_read
        self.reader = channel.EventReader()
        self.protocol = Protocol()
        self.stderr = stderr
        self.eof = False

    def events(self, timeout: float) -> list[dict]:
        """Events that arrived within ``timeout`` seconds; student output is
        drained into its tails on the way (a flood never blocks the child)."""
        if not self.streams:
            time.sleep(timeout)
            return []
        ready, _, _ = select.select(list(self.streams), [], [], timeout)
        events = []
        for fd in ready:
            chunk = os.read(fd, 1 << 16)
            tail = self.streams[fd]
            if not chunk:
                del self.streams[fd]
                self.eof = self.eof or fd == self.events_fd
            elif tail is not None:
                tail.add(chunk)
            else:
                events += self.reader.feed(chunk)
        return events

    def send(self, command: dict) -> bool:
        try:
            channel.send(self.commands, command)
            return True
        except OSError:      # the child is gone: its exit is noticed by the watch loop
            return False

    def exited(self) -> bool:
        return self.proc.poll() is not None and self.eof

    def finish(self) -> int:
        """Kill the child and everything it started; drain what it printed."""
        try:
            os.close(self.commands)
        except OSError:
            pass
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
        if self.events_fd in self.streams:
            os.close(self.events_fd)
        self.proc.stdout.close()
        self.proc.stderr.close()
        return killed


@dataclass
class Supervisor:
    """The children of one grading, under the limits."""
    workdir: Path
    job: ChildJob
    identity: Identity
    startup_s: float
    memory_mb: int
    deadline: float
    result: Execution = field(default_factory=lambda: Execution({}))
    child: Child | None = None
    stdout: Tail = field(default_factory=Tail)
    polls: int = 0
    peak_kb: int = 0

    def execute(self, schedule: Schedule) -> Execution:
        """Run the schedule to its end, the deadline, a load error or tampering."""
        give_to(self.workdir / "home", self.identity)
        try:
            while self.result.load_error is None and not self.result.tampered:
                run = schedule.next_run()
                if run is None or time.monotonic() >= self.deadline:
                    break
                if self.child is None and not self._start():
                    break
                schedule.record(run, self._run(run, schedule))
        finally:
            self._stop()
        for run in schedule.pending():
            schedule.record(run, Outcome("load-error" if self.result.load_error else "skipped",
                                         reason="" if self.result.load_error else "budget"))
        r = self.result
        r.outcomes = dict(schedule.outcomes)
        r.stdout_tail, r.output_bytes, r.peak_rss_mb = self.stdout.text(), self.stdout.total, self.peak_kb / 1024
        return r

    def _start(self) -> bool:
        cpu_s = int(max(30.0, self.deadline - time.monotonic()) * max(1, os.cpu_count() or 1))
        nproc = MAX_PROCESSES + (0 if self.identity.dropped else tasks_of(self.identity.uid))
        self.child = Child(self.workdir, self.job, self.result.children, self.identity, cpu_s, nproc,
                           self.stdout, Tail())
        self.result.children += 1
        failure = self._watch(lambda p: p.state in ("idle", "failed"), lambda: self.startup_s,
                              time.monotonic())
        self.result.jax_version = self.result.jax_version or self.child.protocol.jax_version
        if self.child.protocol.state == "failed":
            return False
        if failure in ("tampered", "budget", None):
            return failure is None
        # Died or hung while starting or importing: every run shares the fate.
        d = self._detail(failure, self.startup_s)
        self.result.load_error = LoadError(failure, returncode=d["returncode"],
                                           stderr_tail=d["stderr_tail"], limit_s=self.startup_s,
                                           disk_mb=DISK_LIMIT_MB)
        self._stop()
        return False

    def _run(self, run: Run, schedule: Schedule) -> Outcome:
        child = self.child
        inputs = schedule.child_inputs(run)
        child.protocol.sent(f"r{run.index}")
        t0 = time.monotonic()
        limit, traced = [run.limit_s], {}
        done: list[dict] = []

        def on_event(kind: str, ev: dict) -> None:
            if kind == "traced":
                limit[0] = schedule.limit_after_trace(run, ev.get("grid_steps"))
                traced.update(traced=True, grid_steps=channel.count(ev.get("grid_steps")),
                              pallas_calls=channel.count(ev.get("pallas_calls")))
            elif kind == "done":
                done.append(ev)

        child.send({"run": run.to_child(inputs)})
        failure = self._watch(lambda p: p.state == "idle", lambda: limit[0], t0, on_event)
        if failure is None:
            got = channel.outcome(done[0], Path(self.job.out_dir), schedule.expected_shape(run))
            return replace(got, **traced)
        phase = "trace" if child.protocol.phase == "tracing" else "run"
        detail = self._detail(failure, limit[0])
        self._stop()
        if failure == "budget":
            return Outcome("skipped", reason="budget", phase=phase)
        if failure == "tampered":
            return Outcome("skipped", reason="tampered", phase=phase)
        return Outcome(failure, seconds=time.monotonic() - t0, phase=phase, limit_s=detail["limit_s"],
                       returncode=detail["returncode"], stderr_tail=detail["stderr_tail"],
                       memory_mb=self.memory_mb, disk_mb=DISK_LIMIT_MB)

    def _detail(self, failure: str, limit_s: float) -> dict:
        child = self.child
        return {"phase": child.protocol.phase, "limit_s": limit_s, "memory_mb": self.memory_mb,
                "disk_mb": DISK_LIMIT_MB, "returncode": child.proc.poll(),
                "stderr_tail": child.stderr.text()[-1500:]}

    def _watch(self, done, limit, since: float, on_event=None) -> str | None:
        """Poll the child until ``done(protocol)`` or a limit breaks; returns
        the failure (tampered, memory, disk, timeout, budget, died) or None."""
        child = self.child
        while not done(child.protocol):
            for ev in child.events(POLL_S):
                try:
                    kind = child.protocol.receive(ev)
                except Tampered as e:
                    self.result.tampered = str(e)
                    return "tampered"
                if kind == "load":
                    self.result.load_error = channel.load_error(ev)
                elif kind == "ready" and not self.result.startup_s:
                    self.result.startup_s = float(ev["seconds"]) if isinstance(ev.get("seconds"), (int, float)) else 0.0
                if on_event is not None:
                    on_event(kind, ev)
            if child.reader.garbage:
                self.result.tampered = "lines that are not grader events were written to the grader's channel"
                return "tampered"
            if done(child.protocol):
                return None
            failure = self._limits(limit(), since)
            if failure:
                return failure
        return None

    def _limits(self, limit_s: float, since: float) -> str | None:
        child = self.child
        rss = _session_rss_kb(child.proc.pid)
        self.peak_kb = max(self.peak_kb, rss)
        self.polls += 1
        now = time.monotonic()
        if rss > self.memory_mb * 1024:
            return "memory"
        if self.polls % DISK_POLLS == 0:
            self.result.leftovers_killed += kill_escaped(self.identity, child.proc.pid)
            if _over_disk(self.identity, self.workdir):
                return "disk"
        if now - since > limit_s:
            return "timeout"
        if now >= self.deadline:
            return "budget"
        if child.exited():
            return "died"
        return None

    def _stop(self) -> None:
        if self.child is not None:
            self.child.send({"exit": True})
            self.result.leftovers_killed += self.child.finish()
            self.child = None


def _over_disk(identity: Identity, workdir: Path) -> bool:
    used, files = student_disk(identity, workdir)
    return used > DISK_LIMIT_MB * 2 ** 20 or files > MAX_STUDENT_FILES


def execute(workdir: Path, job: ChildJob, schedule: Schedule, *, identity: Identity,
            startup_s: float, memory_mb: int, deadline: float) -> Execution:
    """Run every run the schedule hands out, in as few children as possible.

    ``deadline`` is a ``time.monotonic()`` instant no run may go past: a run
    still going then is stopped and it and the remaining runs are reported as
    skipped, so the global time budget holds whatever the student does.
    """
    return Supervisor(workdir, job, identity, startup_s, memory_mb, deadline).execute(schedule)
