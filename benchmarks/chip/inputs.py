"""What a chip check's results depend on, group by group, as hashes of the files.

A chip run records these hashes of the tree it ran (summary.json); the report
writes them into docs/tpu-runs.md; ``tests/test_chip_check.py`` compares them
with the working tree and warns, group by group, when the tree has changed
since the last chip run (CI has no chip, so it warns rather than fails: the
chip check is then due, on the next TPU host)."""
from __future__ import annotations

import hashlib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
SLUGS = ("add", "dma_scale", "flash_attention", "matmul", "softmax")

# group -> glob patterns under the repository root
GROUPS: dict[str, tuple[str, ...]] = {
    "the TPU stage (autograder/tpu)": ("autograder/tpu/**/*.py",),
    "the chip's own words (pallas_surface)": ("autograder/pallas_surface/**/*.py",),
    "the speed model (autograder/speed)": ("autograder/speed/*.py",),
    # What runs on the chip (the report, the estimates and the validation run on a CPU machine).
    "the chip check (benchmarks/chip_check.py, benchmarks/chip)": (
        "benchmarks/chip_check.py", "benchmarks/chip/jobs.py", "benchmarks/chip/points.py",
        "benchmarks/chip/kernels.py"),
    "the halt and hang fixtures (tests/tpu_fixtures)": ("tests/tpu_fixtures/*.py",),
    **{f"assignment {slug}": (f"assignments/{slug}/spec.toml", f"assignments/{slug}/reference.py",
                              f"solutions/{slug}.py", f"assignments/{slug}/corpus/*") for slug in SLUGS},
}


def digests(root: Path = REPO) -> dict[str, str]:
    """group -> 16 hex digits of the hash of its files (names and bytes)."""
    out = {}
    for group, patterns in GROUPS.items():
        h = hashlib.sha256()
        files = sorted({p for pat in patterns for p in root.glob(pat) if p.is_file() and "__pycache__" not in p.parts})
        for p in files:
            h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
        out[group] = h.hexdigest()[:16]
    return out


def changed(recorded: dict[str, str], root: Path = REPO) -> list[str]:
    """The groups whose files differ from ``recorded`` (a group it lacks counts as changed)."""
    now = digests(root)
    return [g for g, d in now.items() if recorded.get(g) != d]
