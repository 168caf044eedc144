"""Gradescope's default container, emulated with cgroups: half a CPU, 768 MB
(`check` measures the solution's grading in it; the benchmarks too).

    with Container() as box:          # None when cgroups cannot be written here
        subprocess.run(cmd, preexec_fn=box.enter)
        box.cpu_s, box.peak_mb

Works as root with cgroup v1 (cpu, cpuacct, memory controllers mounted under
/sys/fs/cgroup/<controller>) or cgroup v2 (a writable /sys/fs/cgroup with the
cpu and memory controllers). Elsewhere ``available()`` says why not.
"""
from __future__ import annotations

import os
import uuid
from pathlib import Path

CG = Path("/sys/fs/cgroup")
CPU_QUOTA = 0.5          # CPUs
MEMORY_MB = 768


def _v1() -> bool:
    return (CG / "cpu" / "cpu.cfs_quota_us").exists() and (CG / "memory" / "memory.limit_in_bytes").exists()


def _v2() -> bool:
    return (CG / "cgroup.controllers").exists() and \
        {"cpu", "memory"} <= set((CG / "cgroup.controllers").read_text().split())


def available() -> str | None:
    """None when a container can be made here, else why not."""
    if os.geteuid() != 0:
        return "needs root to create cgroups"
    if not (_v1() or _v2()):
        return "no writable cgroup v1 (cpu, memory) or v2 hierarchy"
    return None


class Container:
    def __init__(self, cpus: float = CPU_QUOTA, memory_mb: int = MEMORY_MB):
        self.cpus, self.memory_mb = cpus, memory_mb
        self.name = f"pallas-bench-{uuid.uuid4().hex[:8]}"
        self.dirs: list[Path] = []

    def __enter__(self) -> "Container":
        period = 100_000
        if _v1():
            for ctl in ("cpu", "cpuacct", "memory"):
                d = CG / ctl / self.name
                d.mkdir()
                self.dirs.append(d)
            (CG / "cpu" / self.name / "cpu.cfs_period_us").write_text(str(period))
            (CG / "cpu" / self.name / "cpu.cfs_quota_us").write_text(str(int(self.cpus * period)))
            (CG / "memory" / self.name / "memory.limit_in_bytes").write_text(str(self.memory_mb << 20))
        else:
            d = CG / self.name
            d.mkdir()
            self.dirs.append(d)
            (d / "cpu.max").write_text(f"{int(self.cpus * period)} {period}")
            (d / "memory.max").write_text(str(self.memory_mb << 20))
        return self

    def enter(self) -> None:
        """preexec_fn: move the new process (and all it starts) into the container."""
        for d in self.dirs:
            (d / "cgroup.procs").write_text(str(os.getpid()))

    @property
    def cpu_s(self) -> float:
        if _v1():
            return int((CG / "cpuacct" / self.name / "cpuacct.usage").read_text()) / 1e9
        stat = dict(line.split() for line in (self.dirs[0] / "cpu.stat").read_text().splitlines())
        return int(stat["usage_usec"]) / 1e6

    @property
    def peak_mb(self) -> float:
        """Peak memory charged to the container (resident memory and page cache)."""
        path = CG / "memory" / self.name / "memory.max_usage_in_bytes" if _v1() else self.dirs[0] / "memory.peak"
        return int(path.read_text()) / 2 ** 20 if path.exists() else float("nan")

    @property
    def oom_kills(self) -> int:
        path = CG / "memory" / self.name / "memory.oom_control" if _v1() else self.dirs[0] / "memory.events"
        for line in path.read_text().splitlines():
            if line.startswith("oom_kill "):
                return int(line.split()[1])
        return 0

    def __exit__(self, *exc) -> None:
        for d in reversed(self.dirs):
            try:
                d.rmdir()
            except OSError:
                pass


def main(argv: list[str]) -> int:
    """``python -m autograder.isolation.container CMD ...``: run one command in the
    emulated container; print its wall time, CPU time and peak memory."""
    import subprocess
    import sys
    import time
    if not argv:
        print(main.__doc__, file=sys.stderr)
        return 2
    why = available()
    if why:
        print(f"container: {why}", file=sys.stderr)
        return 2
    with Container() as box:
        t0 = time.perf_counter()
        rc = subprocess.run(argv, preexec_fn=box.enter).returncode
        print(f"container (0.5 CPU, 768 MB): exit {rc}, wall {time.perf_counter() - t0:.1f} s, "
              f"CPU {box.cpu_s:.1f} s, peak {box.peak_mb:.0f} MB, OOM kills {box.oom_kills}",
              file=sys.stderr)
    return rc


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv[1:]))
