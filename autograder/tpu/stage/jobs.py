"""The TPU stage's jobs, run inside a chip worker (``worker``): one submission's
whole chip work per job. Arguments and answers are plain JSON data."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ...grading import assignments
from . import kernel as stage, timing


def health(device, args: dict, progress: Callable[..., None]) -> dict:
    """A trivial computation on the device: is its client alive?"""
    import jax.numpy as jnp
    return {"ok": float(jnp.arange(8.0).sum()) == 28.0}


# The run's shared references (``stage.References``): a worker times the kernels of one
# run one after another, and call i's inputs are the same in each; a new run (secret) starts afresh.
_REFERENCES: dict[tuple, stage.References] = {}


def _references(slug: str, secret: int, folder: str | None = None) -> stage.References:
    """The run's references (``folder``: the run's own, where a process of one submission leaves
    them for the next: ``--fresh-process``)."""
    if (slug, secret) not in _REFERENCES:
        _REFERENCES.clear()
        _REFERENCES[(slug, secret)] = stage.References(folder=Path(folder) if folder else None)
    return _REFERENCES[(slug, secret)]


def run_stage(device, args: dict, progress: Callable[..., None]) -> dict:
    """One kernel through the stage: {"slug", "assignments", "submission", "programs" (name -> document
    text), "secret", "rule", "solution" (size -> SizeTime), "flops", "sizes", "evidence_dir"}."""
    from ...grading.run.draws import load_reference
    from ..chip import interpreter
    a = assignments.find(args["slug"], Path(args["assignments"]))
    evidence = args.get("evidence_dir")
    ctx = stage.Context(a, device, device.info(), load_reference(a), interpreter.generic, int(args["secret"]),
                        timing.Rule(**args.get("rule", {})),
                        {k: stage.from_json({"submission": "", "status": "timed", "sizes": [v]}).sizes[0]
                         for k, v in (args.get("solution") or {}).items()},
                        dict(args.get("flops") or {}), Path(evidence) if evidence else None, progress,
                        _references(a.slug, int(args["secret"]), args.get("references_dir")))
    sizes = tuple(stage.Size(**s) for s in args["sizes"]) if args.get("sizes") else None
    programs: dict[str, Any] = {k: v.encode("utf-8") for k, v in args["programs"].items()}
    return stage.run(ctx, args["submission"], programs, sizes).to_json()
