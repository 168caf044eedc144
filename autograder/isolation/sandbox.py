"""Child processes under limits: starting one, sending it requests, watching it.

A grading has two kinds of child (see ``tracing`` and ``execution``): the
tracer, which imports the student's file as the student user, and the
grader's child, which runs rebuilt programs as a user of its own. Each runs
in its own session, with CPU-time, file-size, process-count and core limits,
a resident-memory ceiling measured over every process in its session,
``oom_score_adj`` 1000 (a spike the poll misses kills the child, not the
grader), a wall clock for start-up and one per request (never past the global
deadline). Its stdout/stderr are pipes drained here and kept only as a capped
tail, or dropped (output that could carry a hidden case's shapes): output is
data for the feedback, never protocol. Requests go one at a time over a
command pipe; events come back on another and must follow ``protocol``. A
request that times out, runs out of memory or dies takes only its child down:
the next request starts a fresh one. After every child, every process it
started is killed, wherever it went.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import channel
from .confinement import (
    Identity,
    give_to,
    ipc_bytes,
    kill_escaped,
    kill_leftovers,
    own_child,
    popen_kwargs,
    proc_stat,
    proc_stats,
    python_command,
    remove_ipc_of,
    tasks_of,
    temp_folders,
)
from .outcome import LoadError
from .protocol import Protocol, Tampered

POLL_S = 0.1                           # also the memory sampling period: a /proc scan costs ~2 ms
OUTPUT_TAIL = 4000                     # characters of student output kept for feedback
MAX_PROCESSES = 1024                   # RLIMIT_NPROC for the child's user (XLA threads count)
DISK_LIMIT_MB = 1024                   # what the child's user may write, in all
MAX_STUDENT_FILES = 20_000             # and how many files (each costs the scan)
DRAIN_READS = 64                       # pipe reads (64 KB each) per wake-up while output floods
DISK_POLLS = 5                         # the files are measured every 5th poll (0.5 s)


@dataclass(frozen=True)
class ChildSpec:
    """One kind of child: what it runs, as whom, where, within what."""
    module: str                        # autograder.children.tracer | autograder.children.grader
    job: dict                          # its job file (never a case or probe name)
    identity: Identity
    home: Path                         # HOME and TMPDIR, the child's own
    writable: tuple[Path, ...]         # folders whose files count against the disk limit
    startup_s: float
    memory_mb: int


class GraderFailure(RuntimeError):
    """The grader itself could not run (never the student's doing): results say
    so, and the local command prints it in one paragraph."""


@dataclass
class Stats:
    """What the children of one kind reported over a grading."""
    load_error: LoadError | None = None
    jax_version: str | None = None
    children: int = 0
    peak_rss_kb: int = 0
    leftovers_killed: int = 0
    tampered: str = ""
    startup_s: float = 0.0             # the first child's start-up (JAX and, for the tracer, the file)


@dataclass
class Reply:
    """One request's end: its ``done`` event, or the limit it broke."""
    done: dict | None
    failure: str | None                # tampered | memory | disk | timeout | budget | died
    phase: str = ""                    # tracing | running (the protocol's, at the end)
    seconds: float = 0.0
    limit_s: float = 0.0
    returncode: int | None = None
    stderr_tail: str = ""
    events: dict = field(default_factory=dict)   # kind -> the last such event (e.g. traced)


def student_disk(identity: Identity, roots: tuple[Path, ...]) -> tuple[int, int]:
    """(bytes, files) the child's user has written: its own folders, and (when
    it is a user of its own) what it owns in the shared temp folders. Free space
    is no measure: other processes on the machine (another grading) write too."""
    roots = list(roots) + ([Path(t) for t in temp_folders()] if identity.dropped else [])
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


def _session_rss_kb(sid: int) -> tuple[int, frozenset[int]]:
    """Resident memory of every process whose session is ``sid``, and their pids
    (a scan of all of Linux /proc)."""
    pages, members = 0, set()
    for pid, fields in proc_stats():
        try:
            if int(fields[3]) == sid:       # field 6 of stat: session id; field 24: rss
                pages += int(fields[21])
                members.add(pid)
        except (ValueError, IndexError):
            continue
    return pages * (os.sysconf("SC_PAGE_SIZE") // 1024), frozenset(members)


def _members_rss_kb(sid: int, pids: frozenset[int]) -> int:
    """Resident memory of those of ``pids`` still in session ``sid`` (their stat files only)."""
    pages = 0
    for pid in pids:
        try:
            fields = proc_stat(pid)
            if int(fields[3]) == sid:
                pages += int(fields[21])
        except (OSError, ValueError, IndexError):
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


class Discard(Tail):
    """Output nobody may see (a hidden case's): counted, never kept."""

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)


def _limiter(cpu_s: int, nproc: int):
    def limit_child() -> None:
        # Runs in the child after the switch of user, before exec.
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

    def __init__(self, spec: ChildSpec, job_path: Path, cpu_s: int, nproc: int, stdout: Tail):
        ev_read, ev_write = os.pipe()
        cmd_read, cmd_write = os.pipe()
        self.identity = spec.identity
        self.proc = subprocess.Popen(
            python_command(spec.module, str(job_path), str(ev_write), str(cmd_read)),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=spec.home,
            env=child_env(str(spec.home)), pass_fds=(ev_write, cmd_read), start_new_session=True,
            preexec_fn=_limiter(cpu_s, nproc), **popen_kwargs(spec.identity))
        own_child(self.proc.pid)
        os.close(ev_write)
        os.close(cmd_read)
        self.commands = cmd_write
        self.stderr = Tail()
        self.stdout_fd = self.proc.stdout.fileno()
        self.streams = {ev_read: None, self.stdout_fd: stdout, self.proc.stderr.fileno(): self.stderr}
        self.events_fd = ev_read
        self.reader = channel.EventReader()
        self.protocol = Protocol()
        self.eof = False

    def show_output_in(self, tail: Tail) -> None:
        """Where what the child prints goes from now on."""
        if self.stdout_fd in self.streams:
            self.streams[self.stdout_fd] = tail

    def events(self, timeout: float) -> list[dict]:
        """Events that arrived within ``timeout`` seconds; output is drained
        into its tails on the way (a flood never blocks the child)."""
        if not self.streams:
            time.sleep(timeout)
            return []
        events: list[dict] = []
        for _ in range(DRAIN_READS):
            ready, _, _ = select.select(list(self.streams), [], [], timeout)
            if not ready:
                break
            for fd in ready:
                self._read(fd, events)
            if events:
                break
            timeout = 0.0
        return events

    def _read(self, fd: int, events: list[dict]) -> None:
        chunk = os.read(fd, 1 << 16)
        tail = self.streams[fd]
        if not chunk:
            del self.streams[fd]
            self.eof = self.eof or fd == self.events_fd
        elif tail is not None:
            tail.add(chunk)
        else:
            events += self.reader.feed(chunk)

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
            own_child(self.proc.pid, alive=False)
        except subprocess.TimeoutExpired:
            pass
        killed = kill_leftovers(self.identity, self.proc.pid)
        remove_ipc_of(self.identity)
        deadline = time.monotonic() + 1.0
        while self.streams and time.monotonic() < deadline:
            self.events(0.05)
        if self.events_fd in self.streams:
            os.close(self.events_fd)
        self.proc.stdout.close()
        self.proc.stderr.close()
        return killed


class Supervisor:
    """Children of one kind, started as needed, one request at a time."""

    def __init__(self, spec: ChildSpec, deadline: float, stdout: Tail):
        self.spec, self.deadline, self.stdout = spec, deadline, stdout
        self.stats = Stats()
        self.child: Child | None = None
        self.polls = 0
        self.sampled_at = 0.0
        self.members: tuple[int, frozenset[int]] = (0, frozenset())   # (session, its pids at the last scan)
        give_to(spec.home, spec.identity)

    def ready(self) -> bool:
        """A child that has started and loaded, starting one if needed; False
        when it cannot (a load error, tampering, the budget)."""
        if self.child is not None:
            return True
        if self.stats.load_error is not None or self.stats.tampered or time.monotonic() >= self.deadline:
            return False
        job_path = self.spec.home.parent / f"{self.spec.home.name}-job{self.stats.children}.json"
        job_path.write_text(json.dumps(self.spec.job), encoding="utf-8")
        os.chmod(job_path, 0o644)
        cpu_s = int(max(30.0, self.deadline - time.monotonic()) * max(1, os.cpu_count() or 1))
        nproc = MAX_PROCESSES + (0 if self.spec.identity.dropped else tasks_of(self.spec.identity.uid))
        self.child = Child(self.spec, job_path, cpu_s, nproc, self.stdout)
        self.stats.children += 1
        failure = self._watch(lambda p: p.state in ("idle", "failed"), lambda: self.spec.startup_s,
                              time.monotonic(), None)
        self.stats.jax_version = self.stats.jax_version or self.child.protocol.jax_version
        if self.child.protocol.state == "idle" and failure is None:
            return True
        if self.child.protocol.jax_version is None and failure not in ("tampered", "budget"):
            # No student code runs before the child has loaded JAX (the tracer
            # imports the file after): a child that never got that far is the
            # grader's failure (a broken install, an unreadable job), not the student's.
            code = self.child.proc.poll()
            tail = self.child.stderr.text()[-1500:]
            self.stop()
            raise GraderFailure(f"the grader's {self.spec.module} process failed before it loaded JAX "
                                f"({failure or 'died'}, exit code {code}); its last output:\n{tail}")
        if self.child.protocol.state != "failed" and failure not in ("tampered", "budget"):
            # Died or hung while starting or importing: every request shares the fate.
            self.stats.load_error = LoadError(failure or "died", returncode=self.child.proc.poll(),
                                              stderr_tail=self.child.stderr.text()[-1500:],
                                              limit_s=self.spec.startup_s, disk_mb=DISK_LIMIT_MB)
        self.stop()
        return False

    def request(self, rid: str, command: dict, limit_s: float, output: Tail | None = None,
                on_event: Callable[[str, dict], float | None] | None = None) -> Reply:
        """Send one request and watch it to its ``done`` or a broken limit.
        ``on_event`` sees each event; a number it returns is the new limit."""
        child = self.child
        if output is not None:
            child.show_output_in(output)
        child.protocol.sent(rid)
        t0 = time.monotonic()
        limit, seen = [limit_s], {}

        def event(kind: str, ev: dict) -> None:
            seen[kind] = ev
            changed = on_event(kind, ev) if on_event is not None else None
            if changed is not None:
                limit[0] = changed

        child.send(command)
        failure = self._watch(lambda p: p.state == "idle", lambda: limit[0], t0, event)
        reply = Reply(seen.get("done"), failure, child.protocol.phase, time.monotonic() - t0, limit[0],
                      child.proc.poll(), child.stderr.text()[-1500:], seen)
        if failure is not None:
            self.stop()
        return reply

    def _watch(self, done, limit, since: float, on_event) -> str | None:
        """Poll the child until ``done(protocol)`` or a limit breaks; returns
        the failure (tampered, memory, disk, timeout, budget, died) or None."""
        child = self.child
        while not done(child.protocol):
            for ev in child.events(POLL_S):
                try:
                    kind = child.protocol.receive(ev)
                except Tampered as e:
                    self.stats.tampered = str(e)
                    return "tampered"
                self._startup_event(kind, ev)
                if on_event is not None:
                    on_event(kind, ev)
            if child.reader.garbage:
                self.stats.tampered = "lines that are not grader events were written to the grader's channel"
                return "tampered"
            if done(child.protocol):
                return None
            failure = self._limits(limit(), since)
            if failure:
                return failure
        return None

    def _startup_event(self, kind: str, ev: dict) -> None:
        if kind == "load":
            self.stats.load_error = channel.load_error(ev)
        elif kind == "ready" and not self.stats.startup_s and isinstance(ev.get("seconds"), (int, float)):
            self.stats.startup_s = float(ev["seconds"])

    def _limits(self, limit_s: float, since: float) -> str | None:
        child = self.child
        now = time.monotonic()
        # Sampled by the clock, not per wake-up: a child flooding its output
        # wakes the loop thousands of times a second, and each sample scans /proc.
        if now - self.sampled_at >= POLL_S:
            self.sampled_at = now
            failure = self._sample(child)
            if failure:
                return failure
        if now - since > limit_s:
            return "timeout"
        if now >= self.deadline:
            return "budget"
        if child.exited():
            return "died"
        return None

    def _sample(self, child: Child) -> str | None:
        # Every DISK_POLLS-th poll scans all of /proc for the session's processes (~2 ms
        # with 70 processes); the polls between read only the ones found. A process
        # forked since is counted at the next scan, at most 0.4 s on (a spike before
        # that meets oom_score_adj, as one between polls always did).
        sid, full = child.proc.pid, self.polls % DISK_POLLS == 0
        self.polls += 1
        if full or self.members[0] != sid:
            rss, pids = _session_rss_kb(sid)
            self.members = (sid, pids)
        else:
            rss = _members_rss_kb(sid, self.members[1])
        # Shared memory segments outlive processes: they count against the child.
        rss += ipc_bytes(self.spec.identity) // 1024
        self.stats.peak_rss_kb = max(self.stats.peak_rss_kb, rss)
        if rss > self.spec.memory_mb * 1024:
            return "memory"
        if full:
            self.stats.leftovers_killed += kill_escaped(self.spec.identity, child.proc.pid)
            used, files = student_disk(self.spec.identity, self.spec.writable)
            if used > DISK_LIMIT_MB * 2 ** 20 or files > MAX_STUDENT_FILES:
                return "disk"
        return None

    def stop(self) -> None:
        if self.child is not None:
            self.child.send({"exit": True})
            self.stats.leftovers_killed += self.child.finish()
            self.child = None
