"""Grading a batch: each submission exactly as Gradescope grades it, stored so
an interrupted batch resumes where it stopped.

One grading is the ``gradescope`` verb (``harness.run_gradescope``, what
``run_autograder`` calls) on a Gradescope layout of its own, in a process of
its own: the same code path, the same isolation, a fresh secret run key
(recorded in its results). A grading that crashes or runs past its limit is
recorded as such and never stops the batch. Results are stored under a key of
the submission's content, the assignment (spec and its files) and the grader
(its version and source), so only what changed is graded again.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Literal

from .. import __version__
from ..isolation.confinement import python_command
from ..pallas_surface import release
from ..spec import Assignment
from .export import Submission

GRADING_MB = 512            # what one grading needs (the design notes: about 0.5 GB)
_RUNNING: set = set()       # gradings in progress here (killed when the batch is interrupted)
_LOCK = threading.Lock()
TAIL = 20_000               # characters of a grading's stdout/stderr kept
Status = Literal["graded", "crashed", "timeout"]


@dataclass(frozen=True)
class Job:
    """One grading, all a worker needs (plain data: it may travel to a Dask worker)."""
    submission_id: str
    folder: str
    slug: str
    assignments: str
    timeout_s: float
    key: str
    content: str = ""
    run_key: int | None = None       # the grading's secret run key (drawn here: a failed grading can be replayed)


@dataclass(frozen=True)
class Graded:
    key: str
    submission_id: str
    status: Status
    seconds: float
    results: dict | None        # results.json as written (None: none could be read)
    stdout: str = ""
    stderr: str = ""
    returncode: int | None = None
    staff: str = ""             # the staff's report (Markdown, secret cases' evidence included)
    programs: dict | None = None  # checked programs the TPU stage times (name -> document text)
    jax: str = ""               # the JAX release that graded it (a site made on one release, read on another)
    content: str = ""           # the submission's content hash (which upload this grading is of)
    timeout_s: float | None = None  # the limit it ran under (a timed-out grading's page says it)
    run_key: int | None = None      # the run key it graded with (a failed grading's page replays it)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "Graded":
        fields = json.loads(text)
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in fields.items() if k in known})


def _tree_hash(paths: list[Path], base: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(str(p.relative_to(base)).encode() + b"\0" + hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


# Folders no grading runs: the TPU stage reads gradings, the review site shows
# them (its pages are written anew on every run). A change there regrades nothing,
# so a stage fixed on a TPU host still finds the gradings made on a CPU machine.
NOT_GRADING = ("tpu", "review")


def grader_hash() -> str:
    """The grader's version, source and JAX release: a changed grader, or one on
    another JAX release, regrades."""
    pkg = Path(__file__).resolve().parent.parent
    files = [p for p in pkg.rglob("*") if p.is_file() and p.suffix in (".py", ".j2")
             and p.relative_to(pkg).parts[0] not in NOT_GRADING]
    return hashlib.sha256((__version__ + _tree_hash(files, pkg) + f"jax={jax_release()}").encode()).hexdigest()


def jax_release() -> str:
    """The JAX release this grader's children grade on (its metadata; JAX is not imported)."""
    return release.INSTALLED or "none"


def assignment_hash(a: Assignment) -> str:
    files = [p for p in a.folder.iterdir() if p.is_file() and p.suffix in (".toml", ".py", ".json")]
    return _tree_hash(files, a.folder)


def job_key(sub: Submission, a_hash: str, g_hash: str) -> str:
    """Its id too: two students who upload the same file each get a grading (and a run key)."""
    return hashlib.sha256(f"{sub.id}:{sub.content_hash()}:{a_hash}:{g_hash}".encode()).hexdigest()[:24]


def grade_one(job: Job) -> Graded:
    """Grade one submission in a Gradescope layout of its own (a Dask task too)."""
    root = Path(tempfile.mkdtemp(prefix="pallas-review-"))
    try:
        shutil.copytree(job.folder, root / "submission", symlinks=True)
        (root / "results").mkdir()
        cmd = python_command("autograder", "gradescope", "--root", str(root), "--assignment", job.slug,
                             "--staff-report", str(root / "staff.md"), "--programs", str(root / "programs.json"),
                             "--log-progress", *(["--run-key", str(job.run_key)] if job.run_key is not None else []))
        env = {**os.environ, "PALLAS_AUTOGRADER_ASSIGNMENTS": job.assignments}
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                start_new_session=True)
        with _LOCK:
            _RUNNING.add(proc)
        try:
            out, err = proc.communicate(timeout=job.timeout_s)
            status: Status = "graded" if proc.returncode == 0 else "crashed"
        except subprocess.TimeoutExpired:
            _kill(proc)
            out, err = proc.communicate()
            status = "timeout"
        finally:
            with _LOCK:
                _RUNNING.discard(proc)
        seconds = time.monotonic() - t0
        try:
            results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            results = None
        try:
            staff = (root / "staff.md").read_text(encoding="utf-8")[:200_000]
        except OSError:
            staff = ""
        try:
            programs = json.loads((root / "programs.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            programs = None
        return Graded(job.key, job.submission_id, status, round(seconds, 2), results,
                      out[-TAIL:], err[-TAIL:], proc.returncode, staff, programs, jax_release(), job.content,
                      job.timeout_s, job.run_key)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def stop_running() -> None:
    """Kill every grading in progress (an interrupted batch: what is stored stays)."""
    with _LOCK:
        for proc in list(_RUNNING):
            _kill(proc)


class Store:
    """Stored gradings, one JSON file per key (written atomically)."""

    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)

    def get(self, key: str) -> Graded | None:
        try:
            return Graded.from_json((self.folder / f"{key}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, TypeError):
            return None

    def put(self, graded: Graded) -> None:
        tmp = self.folder / f".{graded.key}.tmp"
        tmp.write_text(graded.to_json(), encoding="utf-8")
        os.replace(tmp, self.folder / f"{graded.key}.json")


def default_jobs() -> int:
    """What this machine's cores and free memory allow (about 0.5 GB a grading)."""
    try:
        avail_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                        if line.startswith("MemAvailable:"))
    except (OSError, StopIteration, ValueError):
        avail_kb = 2 * GRADING_MB * 1024
    return max(1, min(os.cpu_count() or 1, avail_kb // (GRADING_MB * 1024)))


def run_local(jobs: list[Job], workers: int, done: Callable[[Graded], None]) -> None:
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        for future in as_completed([pool.submit(grade_one, j) for j in jobs]):
            done(future.result())
    except BaseException:
        # Interrupted (Ctrl-C): nothing more starts, what runs is stopped, what is stored stays.
        pool.shutdown(wait=False, cancel_futures=True)
        stop_running()
        raise
    pool.shutdown()


def run_dask(jobs: list[Job], address: str, done: Callable[[Graded], None]) -> None:
    """The same gradings on an existing Dask cluster (each worker needs the
    grader installed, and the submissions' and assignments' folders)."""
    try:
        from distributed import Client, as_completed as dask_completed
    except ImportError:
        raise SystemExit("--dask needs the [dask] extra: run `.venv/bin/pip install '.[dask]'` in your "
                         "pallas-autograder checkout (./setup.sh --test installs it too)") from None
    with Client(address) as client:
        futures = client.map(grade_one, jobs, key=[f"grade-{j.key}" for j in jobs], pure=False)
        for future in dask_completed(futures):
            done(future.result())
