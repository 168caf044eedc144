"""What a chip worker's start costs, phase by phase, and what can overlap the
last worker's end (issue 47: ``--fresh-process`` took 17-20 s a submission on a
v5e before its first timed call).

``python3 benchmarks/chip/open_probe.py -o OUT.json [--platform tpu] [--budget-s 120]``
starts probe processes one after another and records, from each one's own
clock: Python up, ``import jax``, the stage's modules imported, the chip opened
(``jax.devices``), a small Pallas kernel compiled and called, the profiler
started and stopped once, and how long the process took to end once told to.
Experiments:

- ``cold``: two processes, each started after the last ended (what
  ``--fresh-process`` pays now);
- ``held``: while one process holds the chip, a second imports everything and
  waits, and a third tries to open the chip at once (is a second opener refused,
  and how fast?); when the first ends, the waiting one opens (the open a
  prestarted worker pays);
- ``cache``: two processes with JAX's persistent compilation cache in a fresh
  folder: does the second compile the same programs faster?
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent


def child(platform: str, hold_s: float, wait: bool) -> int:
    marks = {"start": time.time()}

    def say(**kw) -> None:
        print(json.dumps(kw), flush=True)
    import jax
    marks["import_jax"] = time.time()
    sys.path.insert(0, str(REPO))
    from jax.experimental import pallas as pl  # noqa: F401

    import autograder.grading.run.draws  # noqa: F401
    import autograder.tpu.chip.real  # noqa: F401
    import autograder.tpu.stage.jobs  # noqa: F401
    marks["import_stage"] = time.time()
    if wait:
        say(event="warm", marks=marks)
        sys.stdin.readline()
        marks["go"] = time.time()
    try:
        devices = jax.devices(platform)
    except Exception as e:  # noqa: BLE001 - the refusal is what is measured
        marks["refused"] = time.time()
        say(event="refused", marks=marks, message=f"{type(e).__name__}: {e}"[:600])
        return 2
    marks["open"] = time.time()
    import jax.numpy as jnp

    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2.0 + 1.0
    f = jax.jit(pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((1024, 1024), jnp.float32), grid=(4,),
                               in_specs=[pl.BlockSpec((256, 1024), lambda i: (i, 0))],
                               out_specs=pl.BlockSpec((256, 1024), lambda i: (i, 0)),
                               interpret=platform != "tpu"))
    x = jax.device_put(jnp.ones((1024, 1024), jnp.float32), devices[0])
    marks["input"] = time.time()
    exe = f.lower(x).compile()
    marks["compile"] = time.time()
    exe(x).block_until_ready()
    marks["first_call"] = time.time()
    trace = tempfile.mkdtemp(prefix="probe-trace-")
    jax.profiler.start_trace(trace)
    exe(x).block_until_ready()
    jax.profiler.stop_trace()
    marks["profiled_call"] = time.time()
    say(event="ready", marks=marks, device=str(devices[0].device_kind))
    time.sleep(hold_s)
    say(event="exiting", at=time.time())
    return 0


class Probe:
    """One probe process; a thread reads its words and another notes when it ends (on this clock)."""

    def __init__(self, platform: str, hold_s: float = 0.0, wait: bool = False, env: dict | None = None):
        import queue
        import threading
        self.spawned = time.time()
        e = {**os.environ, **(env or {})}
        if platform != "tpu":
            e["JAX_PLATFORMS"] = platform
        self.proc = subprocess.Popen([sys.executable, __file__, "child", platform, str(hold_s), str(int(wait))],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, env=e)
        self.events: list[dict] = []
        self.q: queue.Queue = queue.Queue()
        self.ended = 0.0

        def read() -> None:
            for line in self.proc.stdout:
                if line.strip().startswith("{"):
                    self.q.put(json.loads(line))
            self.proc.wait()
            self.ended = time.time()
            self.q.put({"event": "eof"})
        threading.Thread(target=read, daemon=True).start()

    def next(self, timeout: float = 120) -> dict:
        ev = self.q.get(timeout=timeout)
        self.events.append(ev)
        return ev

    def go(self) -> None:
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def finish(self, timeout: float = 120) -> dict:
        """Read to its end; the seconds from its last word to its exit."""
        while self.next(timeout)["event"] != "eof":
            pass
        last = next((e for e in reversed(self.events) if e.get("event") == "exiting"), None)
        return {"spawned": self.spawned, "ended": self.ended, "events": self.events[:-1],
                "exit_s": round(self.ended - last["at"], 3) if last else None, "returncode": self.proc.returncode}


def _phases(run: dict) -> dict:
    """Seconds of each phase, from the process's own marks (and its spawn, on the parent's clock)."""
    marks = next((e["marks"] for e in run["events"] if "marks" in e and e["event"] in ("ready", "refused")), {})
    order = ["start", "import_jax", "import_stage", "go", "open", "refused", "input", "compile", "first_call",
             "profiled_call"]
    out, prev = {"python_start": round(marks.get("start", run["spawned"]) - run["spawned"], 3)}, None
    for name in order:
        if name in marks:
            if prev is not None:
                out[name] = round(marks[name] - marks[prev], 3)
            prev = name
    out["exit"] = run.get("exit_s")
    return out


def experiments(platform: str, budget_s: float) -> dict:
    t0, out = time.monotonic(), {"platform": platform}
    cold = []
    for _ in range(2):
        p = Probe(platform)
        cold.append(p.finish())
    out["cold"] = [{"phases": _phases(r), "returncode": r["returncode"]} for r in cold]
    if time.monotonic() - t0 < budget_s * 0.6:
        a = Probe(platform, hold_s=6.0)
        a.next()                                     # a holds the chip
        b = Probe(platform, wait=True)
        b.next()                                     # b imported everything and waits
        c = Probe(platform)                          # c tries to open now
        held = a.finish()
        go = time.time()
        b.go()                                       # a has ended: b opens now
        refused = c.finish()
        waited = b.finish()
        out["held"] = {"holder": _phases(held), "second_opener": _phases(refused),
                       "second_opener_said": next((e.get("message") for e in refused["events"]
                                                   if e.get("event") == "refused"), None),
                       "prestarted": _phases(waited), "prestarted_returncode": waited["returncode"],
                       "prestarted_open_after_holder_ended_s": round(
                           next(e["marks"]["open"] for e in waited["events"] if e.get("event") == "ready")
                           - max(held["ended"], go), 3) if waited["returncode"] == 0 else None}
    if time.monotonic() - t0 < budget_s * 0.8:
        cache = tempfile.mkdtemp(prefix="probe-jax-cache-")
        env = {"JAX_COMPILATION_CACHE_DIR": cache, "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
               "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0"}
        out["cache"] = [_phases(Probe(platform, env=env).finish()) for _ in range(2)]
    out["wall_s"] = round(time.monotonic() - t0, 1)
    return out


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        return child(sys.argv[2], float(sys.argv[3]), sys.argv[4] == "1")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", type=Path, required=True)
    ap.add_argument("--platform", default="tpu")
    ap.add_argument("--budget-s", type=float, default=120.0)
    args = ap.parse_args()
    result = experiments(args.platform, args.budget_s)
    args.output.write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
