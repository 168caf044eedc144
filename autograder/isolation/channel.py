"""The channel between the grader and a child: commands out and events and
output files in (the parent's side, each checked before use), and the child's
end (``Writer``, ``commands``). Numpy only, no JAX.

Events are JSON lines on a private pipe; an output is an ``.npy`` file the
child wrote into a folder the student user owns, so it is read at once when
its ``done`` event arrives, only as a plain single-link file, never with
pickle, and only with the shape and dtype kind the run may return.
"""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ..pallas_surface.static import facts
from .outcome import LoadError, Outcome

OUTPUT_FILE_LIMIT = 64 * 1024 * 1024   # per file the child writes (also its RLIMIT_FSIZE)
MAX_EVENT_BYTES = 8 * 1024 * 1024      # one event line; a longer one is not the grader's
OUTPUT_KINDS = "fiub"                  # dtype kinds an output may have
MAX_ORDER = 4096                       # recorded grid points kept


class Writer:
    """The child's end of the event pipe."""

    def __init__(self, fd: int):
        # Keep a private duplicate: code that closes fd 3 does not close ours.
        self._f = os.fdopen(os.dup(fd), "w", buffering=1, encoding="utf-8")
        os.close(fd)
        os.set_inheritable(self._f.fileno(), False)   # not passed on by subprocess/exec
        # A process the child forks (os.fork, multiprocessing) must not be able to
        # write events: close the channel in every forked child.
        os.register_at_fork(after_in_child=self._close_in_fork)

    def _close_in_fork(self) -> None:
        try:
            os.close(self._f.fileno())
        except OSError:
            pass

    def send(self, **event) -> None:
        self._f.write(json.dumps(event) + "\n")
        self._f.flush()


def commands(fd: int, key: str):
    """The child's end of the command pipe: each command's ``key`` object,
    until exit or EOF."""
    f = os.fdopen(os.dup(fd), "r", encoding="utf-8")
    os.close(fd)
    os.set_inheritable(f.fileno(), False)
    for line in f:
        cmd = json.loads(line)
        if cmd.get("exit"):
            return
        yield cmd[key]


def send(fd: int, command: dict) -> None:
    """One command line to the child (a run to execute, or exit)."""
    data = (json.dumps(command) + "\n").encode()
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class EventReader:
    """Splits the event pipe into JSON objects; counts lines that are not."""

    def __init__(self) -> None:
        self.buf = b""
        self.garbage = 0

    def feed(self, chunk: bytes) -> list[dict]:
        self.buf += chunk
        *lines, self.buf = self.buf.split(b"\n")
        if len(self.buf) > MAX_EVENT_BYTES:
            self.garbage += 1
            self.buf = b""
        events = []
        for line in lines:
            try:
                ev = json.loads(line)
            except ValueError:
                ev = None
            if isinstance(ev, dict):
                events.append(ev)
            else:
                self.garbage += 1
        return events


def open_plain(name: Any, folder: Path, suffix: str, max_bytes: int) -> BinaryIO | str:
    """``folder/name`` opened for reading, or why not. Only a plain file directly
    inside ``folder`` (not a link, FIFO or hard link to another file: a child's
    user owns that folder), of at most ``max_bytes``."""
    if not isinstance(name, str) or os.path.basename(name) != name or not name.endswith(suffix):
        return "the file was not where the grader put it"
    try:
        fd = os.open(folder / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as e:
        return f"the file could not be read ({type(e).__name__})"
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or st.st_size > max_bytes:
        os.close(fd)
        return "the file was replaced by something that is not the grader's file"
    return os.fdopen(fd, "rb")


def read_output(name: Any, out_dir: Path) -> np.ndarray | str:
    """The array a run saved, or why it cannot be read (``open_plain``), never
    unpickled."""
    f = open_plain(name, out_dir, ".npy", OUTPUT_FILE_LIMIT)
    if isinstance(f, str):
        return f"the output could not be read back: {f}"
    try:
        with f:
            arr = np.load(f, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        return f"the output could not be read back ({type(e).__name__})"
    if not isinstance(arr, np.ndarray) or arr.dtype.kind not in OUTPUT_KINDS:
        return "the output file does not hold a numeric array"
    return arr


def _text(value: Any, limit: int) -> str:
    return value[:limit] if isinstance(value, str) else ""


def _ints(value: Any) -> tuple[int, ...]:
    if not isinstance(value, list) or len(value) > 16:
        return ()
    return tuple(v for v in value if isinstance(v, int) and not isinstance(v, bool))


def _order(value: Any) -> tuple:
    out = []
    for item in value[:MAX_ORDER] if isinstance(value, list) else ():
        if isinstance(item, list) and len(item) == 2 and isinstance(item[1], int):
            out.append((_ints(item[0]), item[1]))
    return tuple(out)


def outcome(ev: dict, out_dir: Path, expected_shape: tuple[int, ...] | None, analysis: str | None = None) -> Outcome:
    """The typed outcome of one ``done`` event: a kernel output is read now, a
    static analysis's facts decoded (``analysis``: the run's). Facts of the wrong
    form come from the grader's own child, never from student code: a
    ``facts.FactsError`` is the grader's failure, not a finding."""
    status = ev.get("status")
    common = dict(seconds=float(ev["seconds"]) if isinstance(ev.get("seconds"), (int, float)) else 0.0,
                  phase=_text(ev.get("phase"), 20), pallas_calls=count(ev.get("pallas_calls")),
                  order=_order(ev.get("order")), races_found=ev.get("races_found") is True,
                  captured=_text(ev.get("captured"), 4000))
    if status == "error":
        frames = ev.get("frames") if isinstance(ev.get("frames"), list) else []
        return Outcome("error", error_type=_text(ev.get("type"), 200) or "Exception",
                       message=_text(ev.get("message"), 4000),
                       frames=tuple(f[:500] for f in frames[:8] if isinstance(f, str)), **common)
    if status == "bad-type":
        return Outcome("bad-type", returned=_text(ev.get("type"), 200), **common)
    if status != "ok":
        return Outcome("error", error_type="ProtocolError",
                       message="the run reported an unknown status", **common)
    if "facts" in ev:
        if analysis is None:
            raise facts.FactsError("a kernel run reported facts")
        return Outcome("ok", facts=facts.decode(analysis, ev["facts"]), **common)
    dtype, shape = _text(ev.get("dtype"), 40), _ints(ev.get("shape"))
    if expected_shape is not None and shape != tuple(expected_shape):
        return Outcome("ok", dtype=dtype, shape=shape, output_problem="wrong shape", **common)
    out = read_output(ev.get("file"), out_dir)
    if isinstance(out, str):
        return Outcome("ok", dtype=dtype, shape=shape, output_problem=out, **common)
    if out.shape != shape:
        return Outcome("ok", dtype=dtype, shape=tuple(out.shape),
                       output_problem="the output file does not match the shape reported", **common)
    return Outcome("ok", dtype=dtype, shape=shape, output=out, **common)


def count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


LOAD_KINDS = ("syntax", "import", "exit", "missing-function", "arity")


def load_error(ev: dict) -> LoadError:
    """The typed form of the child's ``load`` error event."""
    kind = ev.get("kind") if ev.get("kind") in LOAD_KINDS else "import"
    frames = ev.get("frames") if isinstance(ev.get("frames"), list) else []
    found = ev.get("found") if isinstance(ev.get("found"), list) else []
    line = ev.get("line")
    return LoadError(kind, error_type=_text(ev.get("type"), 200), message=_text(ev.get("message"), 4000),
                     frames=tuple(f[:500] for f in frames[:8] if isinstance(f, str)),
                     line=line if isinstance(line, int) and not isinstance(line, bool) else None,
                     found=tuple(f[:100] for f in found[:20] if isinstance(f, str)),
                     signature=_text(ev.get("signature"), 300))
