"""Who student code runs as, what it may touch, and making sure none of it survives.

On Gradescope the grader runs as root next to the instructor's solutions, the
hidden cases and ``submission_metadata.json`` (the student's previous results).
Student code therefore runs as a dedicated unprivileged user (created by
setup.sh, or here on first use), which cannot read those files, write the
results, or signal/ptrace the grader. Where the grader is not root (a
student's laptop) it cannot switch users; the child is still confined to its
own session and limits, and the feedback says so once.
"""
from __future__ import annotations

import ctypes
import dataclasses
import fcntl
import functools
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

STUDENT_USER = "pallas-student"
NOBODY_UID = 65534
# Gradings running at once on one machine (a TA's batch, the test suite) must
# not kill each other's processes, so each holds a slot: slot 0 is the student
# user itself, slot k > 0 a uid of its own with no passwd entry (root may run a
# process as any uid; file access then goes by the "other" permissions).
SLOTS = 32
SLOT_UID_BASE = 1_900_000_000
# The grader's child (rebuilt programs, never student code) runs as a uid of its
# own per slot: student processes (another uid, not root) cannot signal or
# ptrace it, read its inputs or write its outputs.
GRADER_UID_BASE = 1_950_000_000
NOBODY_GID = 65534
LOCK_DIR = Path("/run/pallas-autograder")
TEMP_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm")   # where any user may leave files
PR_SET_DUMPABLE = 4               # linux/prctl.h
PR_SET_CHILD_SUBREAPER = 36


# The grader's own package root: the child imports the same autograder as the
# grader (a checkout, a Gradescope source folder, or site-packages), whichever
# way it was installed. -I keeps the environment, user site and working
# directory out of sys.path. The package is loaded from its own folder by path:
# a Gradescope source folder is closed to listing (0o711, see below), and
# Python's path finder, unable to list it, would silently fall back to whatever
# copy site-packages holds (an older install, after a checkout's edits).
PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
_BOOT = ("import importlib.util, runpy, sys; r = sys.argv[1] + '/autograder'; "
         "s = importlib.util.spec_from_file_location('autograder', r + '/__init__.py', "
         "submodule_search_locations=[r]); m = importlib.util.module_from_spec(s); "
         "sys.modules['autograder'] = m; s.loader.exec_module(m); sys.argv = sys.argv[2:]; "
         "runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)")


def python_command(module: str, *args: str) -> list[str]:
    """``python -m module args`` in isolated mode, importing this grader's package.
    Unbuffered (``-I`` ignores PYTHONUNBUFFERED): the child is killed at the
    end, and what it printed must not die in a buffer with it."""
    return [sys.executable, "-I", "-u", "-c", _BOOT, PACKAGE_ROOT, module, *args]


@dataclass(frozen=True)
class Identity:
    """The user student code runs as."""
    uid: int
    gid: int
    name: str
    dropped: bool       # True: a user other than the grader's (the grader is root)
    note: str = ""      # why privileges were not dropped, for the feedback


def _create_user() -> None:
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    if os.path.exists(useradd):
        subprocess.run([useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                        STUDENT_USER], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False, timeout=30)


def student_identity() -> Identity:
    if os.geteuid() != 0:
        try:
            name = pwd.getpwuid(os.getuid()).pw_name
        except KeyError:
            name = str(os.getuid())
        return Identity(os.getuid(), os.getgid(), name, False,
                        "The grader was not running as root here, so it could not switch your code "
                        "to a separate unprivileged user; your code still ran in its own isolated "
                        "process with time and memory limits. On Gradescope it runs unprivileged.")
    try:
        pw = pwd.getpwnam(STUDENT_USER)
    except KeyError:
        _create_user()
        try:
            pw = pwd.getpwnam(STUDENT_USER)
        except KeyError:
            # No useradd (minimal image): nobody is as unprivileged, only not ours alone.
            return Identity(NOBODY_UID, NOBODY_UID, "nobody", True)
    return Identity(pw.pw_uid, pw.pw_gid, pw.pw_name, True)


def _lock_dir() -> Path:
    for folder in (LOCK_DIR, Path(tempfile.gettempdir()) / "pallas-autograder-locks"):
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
            st = os.lstat(folder)
            if stat.S_ISDIR(st.st_mode) and st.st_uid == 0 and not st.st_mode & 0o077:
                return folder
        except OSError:
            continue
    raise RuntimeError("no private folder for grading slots (/run and the temp folder refused)")


@dataclass(frozen=True)
class Slot:
    """Who one grading's processes run as: the student's code (the tracer), and
    the grader's child, which runs rebuilt programs and no student code."""
    student: Identity
    grader: Identity


def _grader(k: int) -> Identity:
    return Identity(GRADER_UID_BASE + k, NOBODY_GID, f"pallas-grader+{k}", True)


@contextmanager
def student_slot():
    """The identities of one grading, held until it ends."""
    base = student_identity()
    if not base.dropped:
        yield Slot(base, base)
        return
    folder = _lock_dir()
    for k in range(SLOTS):
        fd = os.open(folder / f"slot{k}", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            student = base if k == 0 else dataclasses.replace(
                base, uid=SLOT_UID_BASE + k, name=f"{base.name}+{k}")
            yield Slot(student, _grader(k))
        finally:
            os.close(fd)
        return
    yield Slot(base, _grader(SLOTS))   # every slot busy: share, as one grading per machine would


def make_reachable(identity: Identity) -> list[str]:
    """Let the student user run this interpreter and import the grader's child.

    A Python under /root (pyenv, CI images) is unreachable for any other user;
    each folder on the way to the interpreter, its standard library, the venv's
    packages and this package gets search permission (o+x: traversable, not
    listable). Returns the folders changed."""
    if not identity.dropped:
        return []
    import sysconfig
    targets = {os.path.realpath(sys.executable), sys.executable, os.path.dirname(os.__file__),
               sysconfig.get_paths()["purelib"], str(Path(__file__).resolve().parents[1])}
    changed = []
    for target in targets:
        for p in (Path(target), *Path(target).parents):
            try:
                st = os.stat(p)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode) and not st.st_mode & stat.S_IXOTH:
                os.chmod(p, st.st_mode | stat.S_IXOTH)
                changed.append(str(p))
    return changed


def popen_kwargs(identity: Identity) -> dict:
    """Arguments for subprocess.Popen that start the child as ``identity``."""
    if not identity.dropped:
        return {}
    return {"user": identity.uid, "group": identity.gid, "extra_groups": []}


def guard_grader() -> None:
    """Two process flags on the grader itself. Subreaper: orphans of the child
    (double forks, setsid daemons) are re-parented here instead of init, so
    ``kill_leftovers`` finds them. Not dumpable: even a child running as the
    same user (no root) cannot ptrace the grader or read its /proc memory,
    environment or open files."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def proc_stat(pid: int) -> list[str]:
    """The fields of /proc/PID/stat after the command name: state, ppid, pgrp,
    session, ... rss (index 21, in pages). Raises OSError or ValueError."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        s = f.read().decode("ascii", "replace")
    return s[s.rindex(")") + 2:].split()


def proc_stats():
    """(pid, ``proc_stat(pid)``) of every process."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            yield int(entry.name), proc_stat(int(entry.name))
        except (OSError, ValueError):
            continue


def _processes() -> list[tuple[int, int, int, int]]:
    """(pid, ppid, session, real uid) of every live process (Linux /proc);
    zombies are already dead and are left to be reaped."""
    found = []
    for pid, fields in proc_stats():
        try:
            if fields[0] in ("Z", "X"):
                continue
            # Real uid from status: /proc/PID itself is owned by root once a
            # process makes itself non-dumpable.
            with open(f"/proc/{pid}/status", "rb") as f:
                uid = next(int(line.split()[1]) for line in f if line.startswith(b"Uid:"))
            found.append((pid, int(fields[1]), int(fields[3]), uid))
        except (OSError, ValueError, IndexError, StopIteration):
            continue
    return found


def tasks_of(uid: int) -> int:
    """Threads of every process whose real uid is ``uid`` (what RLIMIT_NPROC counts)."""
    total = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status", "rb") as f:
                fields = dict(line.split(b":", 1) for line in f if b":" in line)
            if int(fields[b"Uid"].split()[0]) == uid:
                total += int(fields[b"Threads"])
        except (OSError, ValueError, KeyError):
            continue
    return total


def leftovers(identity: Identity, session: int) -> list[int]:
    """Processes the child started that are still alive: its session, anything
    re-parented to this grader that is not one of its own children, and (when
    privileges were dropped) every process of the student user."""
    me = os.getpid()
    procs = _processes()
    children = {}
    for pid, ppid, _sid, _uid in procs:
        children.setdefault(ppid, []).append(pid)
    doomed = {pid for pid, _ppid, sid, uid in procs
              if pid != me and (sid == session or (identity.dropped and uid == identity.uid))}
    # Descendants of the doomed (a setsid'd grandchild keeps its parent link).
    stack = list(doomed)
    while stack:
        for c in children.get(stack.pop(), []):
            if c not in doomed and c != me:
                doomed.add(c)
                stack.append(c)
    return sorted(doomed)


def kill_escaped(identity: Identity, session: int) -> int:
    """While the child runs: SIGKILL every process of the student user that left
    the child's session (setsid daemons, detached fork bombs). Student code has
    no reason to leave it, and such a process only competes with the grading.
    Only when the student user is a user of its own."""
    if not identity.dropped:
        return 0
    killed = 0
    for pid, _ppid, sid, uid in _processes():
        if uid == identity.uid and sid != session:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                pass
    _reap()
    return killed


def kill_leftovers(identity: Identity, session: int, rounds: int = 20) -> int:
    """SIGKILL everything ``leftovers`` finds until nothing is left (a fork loop
    is bounded by RLIMIT_NPROC). Returns how many processes were killed."""
    killed = 0
    for _ in range(rounds):
        try:
            os.killpg(session, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        pids = leftovers(identity, session)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                pass
        _reap()
        time.sleep(0.02)
    return killed


# Pids of the children this grader started with Popen: their exit status is
# theirs to collect (Popen.poll). A blanket waitpid(-1) would steal it, and
# Popen then reports exit code 0 for a child that died with os._exit(3).
_OWN_CHILDREN: set[int] = set()


def own_child(pid: int, alive: bool = True) -> None:
    """Mark a Popen child of this grader as never to be reaped by ``_reap``."""
    (_OWN_CHILDREN.add if alive else _OWN_CHILDREN.discard)(pid)


def _reap() -> None:
    """Collect re-parented zombies (orphans of a child, re-parented here by the
    subreaper flag) so they do not linger in the process table."""
    me = os.getpid()
    for pid, fields in proc_stats():
        if pid in _OWN_CHILDREN or len(fields) < 2 or fields[0] != "Z" or fields[1] != str(me):
            continue
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            continue


_SKIP_TREES = ("/proc", "/sys", "/dev", "/run/user", "/snap")


@functools.lru_cache(maxsize=1)
def temp_folders() -> tuple[str, ...]:
    """Every folder any user may write in (world-writable), three levels from
    the root, found once: where student code can leave files that outlive it
    (/tmp, /var/tmp, /dev/shm, /run/lock, ...)."""
    found = list(TEMP_FOLDERS)
    stack = [("/", 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for e in entries:
            try:
                if not e.is_dir(follow_symlinks=False) or e.path.startswith(_SKIP_TREES):
                    continue
                if e.stat(follow_symlinks=False).st_mode & stat.S_IWOTH and e.path not in found:
                    found.append(e.path)
                elif depth < 2:
                    stack.append((e.path, depth + 1))
            except OSError:
                continue
    return tuple(found)


def _ipc(kind: str) -> list[tuple[int, int, int]]:
    """(id, owner uid, bytes) of System V IPC objects of one kind (shm, sem, msg)."""
    out = []
    try:
        with open(f"/proc/sysvipc/{kind}") as f:
            header, *rows = f.read().splitlines()
    except OSError:
        return out
    cols = header.split()
    for row in rows:
        v = dict(zip(cols, row.split()))
        try:
            size = int(v.get("size", v.get("cbytes", 0)))
            out.append((int(v[cols[1]]), int(v["uid"]), size))
        except (KeyError, ValueError):
            continue
    return out


def ipc_bytes(identity: Identity) -> int:
    """Shared memory the user holds (it outlives processes: counted against memory)."""
    if not identity.dropped:
        return 0
    return sum(size for _id, uid, size in _ipc("shm") if uid == identity.uid)


def remove_ipc_of(identity: Identity) -> int:
    """Remove every System V shared memory segment, semaphore set and message
    queue the user owns (only when it is a user of its own)."""
    if not identity.dropped:
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    removed = 0
    for kind, call in (("shm", libc.shmctl), ("sem", libc.semctl), ("msg", libc.msgctl)):
        for ident, uid, _size in _ipc(kind):
            if uid == identity.uid:
                args = (ident, 0, 0) if kind != "sem" else (ident, 0, 0, 0)   # IPC_RMID is 0
                removed += call(*args) == 0
    return removed


def remove_files_of(identity: Identity, folders=None) -> int:
    """Delete what the user left in the world-writable folders, and its IPC
    objects (only when it is a user of its own: otherwise its files are the
    grader user's too)."""
    if not identity.dropped:
        return 0
    removed = remove_ipc_of(identity)
    for folder in folders or temp_folders():
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_uid != identity.uid:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)
                removed += 1
            except OSError:
                continue
    return removed


def give_to(path: Path, identity: Identity, mode: int = 0o700) -> None:
    """Make a working folder the student's own (for outputs, HOME, TMPDIR)."""
    path.mkdir(parents=True, exist_ok=True)
    if identity.dropped:
        os.chown(path, identity.uid, identity.gid)
    os.chmod(path, mode)


def readable_by_all(path: Path) -> None:
    """Grader-owned, read-only for the child: folders 0755, files 0644."""
    if path.is_dir() and not path.is_symlink():
        os.chmod(path, 0o755)
        for p in path.rglob("*"):
            if not p.is_symlink():
                os.chmod(p, 0o755 if p.is_dir() else 0o644)
    elif path.exists():
        os.chmod(path, 0o644)


def protect_layout(root: Path, source: Path) -> list[str]:
    """Close the Gradescope layout to the student user (root only).

    The child needs the venv and the grader package (it imports
    ``autograder.children.grader``); it must not read the assignments (hidden cases,
    seeds, reference), the solutions, the previous results in
    ``submission_metadata.json``, or the results folder. The source folder is
    left traversable but not listable. Returns what was closed."""
    if os.geteuid() != 0:
        return []
    closed = []

    def close(p: Path) -> None:
        """Owner-only, keeping the owner's bits (run_autograder stays executable)."""
        if p.exists() and not p.is_symlink():
            os.chown(p, 0, 0)
            os.chmod(p, (os.stat(p).st_mode & 0o700) | 0o600)
            closed.append(str(p))

    close(root / "submission_metadata.json")
    close(root / "results")
    if source.is_dir():
        for name in os.listdir(source):
            p = source / name
            if name in (".venv", "autograder") or p.is_symlink():
                continue
            close(p)
        os.chmod(source, 0o711)
        for p in (source, *source.parents):
            mode = os.stat(p).st_mode
            if not mode & stat.S_IXOTH:
                os.chmod(p, mode | stat.S_IXOTH)   # traversable, so the venv is reachable
    return closed
