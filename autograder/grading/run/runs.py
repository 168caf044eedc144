"""The plan's run types: what a probe asks for (``Variant``), one draw of inputs
(``Draw``), one execution in the child (``Run``) and the instructor's checks'
request (``ChecksRun``). Plain frozen data (``plan`` builds them; see its
docstring for how they relate)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ...spec import Case, Stress
from .fills import Fill

Rung = Literal["generic", "tpu-interpret", "static"]


@dataclass(frozen=True)
class Variant:
    """What a probe asks for on one case: a static analysis or an interpreter
    run with other switches, on the case's own inputs, the production size
    (abstract shapes), or a stress input."""
    name: str
    rung: Rung
    analysis: str | None = None          # static runs: which analysis
    params: tuple[tuple[str, Any], ...] = ()
    fill: Fill | None = None             # None: the grading's test fill (``fills.test_fill``)
    record: bool = False
    races: bool = False
    capture: bool = False
    inputs: Literal["case", "production"] | Stress = "case"
    # Every grid axis run as 'arbitrary' (in order, one core): TPU interpret mode
    # shuffles the axes marked 'parallel' on every run, even with no random_seed.
    in_order: bool = False


@dataclass(frozen=True)
class Draw:
    index: int                          # names the draw's input files
    case: Case                          # the case as run (a stress input is a case of its own)
    entropy: tuple[int, ...]            # seed words for numpy's default_rng
    stream: int
    signature: int                      # draws with one signature share one trace
    abstract: bool = False              # shapes only (the production size): never data
    # The same draw altered to explain a wrong result (``draws.ALTERED``): "nudged" (one
    # element changed: which outputs move), "steady" (every block of the reduction alike).
    altered: str = ""

    @property
    def seed(self) -> list[int]:
        return list(self.entropy)


@dataclass(frozen=True)
class Run:
    index: int
    case: Case                          # the graded case the run belongs to
    rung: Rung
    draw: Draw
    analysis: str | None = None
    params: tuple[tuple[str, Any], ...] = ()
    fill: Fill | None = None            # what unwritten memory holds (every kernel run has one)
    record: bool = False
    races: bool = False
    capture: bool = False
    in_order: bool = False              # dimension semantics all 'arbitrary' (see Variant)
    probe: str | None = None            # None: a correctness run
    variant: str = ""
    stress: Stress | None = None
    limit_s: float = 60.0               # wall clock for this run, derived (see calibration)
    pad_fill: Fill | None = None        # the padding of partial blocks filled apart (None: with ``fill``)

    @property
    def kind(self) -> Literal["kernel", "static"]:
        return "static" if self.analysis else "kernel"

    @property
    def label(self) -> str:
        """For people and logs only (case names may hold '/'): never parsed."""
        return f"{self.case.name}/{self.rung}" if self.probe is None else \
            f"{self.case.name}/{self.probe}/{self.variant}"

    @property
    def params_dict(self) -> dict[str, Any]:
        return dict(self.params)

    def execution(self) -> tuple:
        """What makes two runs the same execution (a probe may reuse another's)."""
        return (self.draw.index, self.rung, self.analysis, self.params, self.fill, self.record,
                self.races, self.capture, self.in_order, self.pad_fill)

    def to_child(self, input_files: list[dict]) -> dict:
        """All the child learns of this run: opaque ids, never case or probe names."""
        return {"id": f"r{self.index}", "trace": f"t{self.draw.signature}", "kind": self.kind,
                "analysis": self.analysis, "rung": self.rung, "params": dict(self.params),
                "fill": self.fill.to_child() if self.fill is not None else None,
                "pad_fill": self.pad_fill.to_child() if self.pad_fill is not None else None,
                "record": self.record, "races": self.races,
                "capture": self.capture, "in_order": self.in_order, "inputs": input_files,
                "output": f"r{self.index}.npy"}


@dataclass(frozen=True)
class ChecksRun:
    """The instructor's custom checks (``[checks]``): one request to the grader's
    child, after every run. The checks may call the kernel with arrays of any
    graded case's shapes and dtypes; the child learns those signatures only
    (never a case's name), each by its trace."""
    file: str                                           # the checks file's name
    signatures: tuple[tuple[int, tuple[tuple[tuple[int, ...], str], ...]], ...]
    rungs: tuple[str, ...]
    limit_s: float

    def to_child(self, folder: str, traced: frozenset[int]) -> dict:
        """``traced``: the signatures whose trace the parent checked (the others
        fail each kernel call, saying so)."""
        return {"id": "checks", "kind": "checks", "folder": folder, "file": self.file, "rungs": list(self.rungs),
                "signatures": [{"trace": f"t{sig}" if sig in traced else None, "signature": sig,
                                "inputs": [{"shape": list(shape), "dtype": dtype} for shape, dtype in arrays]}
                               for sig, arrays in self.signatures]}
