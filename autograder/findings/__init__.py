"""The one immutable finding type and the catalogue of stable finding IDs.

Checks produce findings; scoring and rendering consume them and never re-run
code. IDs are a public contract: they appear in results.json tags, in the
templates and in the README, so they never change once published.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping

# The ladder of rungs, in the order a kernel climbs it.
RUNGS: dict[str, str] = {
    "static": "static analysis (nothing runs)",
    "generic": "generic interpreter (interpret=True)",
    "tpu-interpret": "TPU interpret mode (pltpu.InterpretParams)",
    "tpu": "real TPU (Mosaic compiler)",
}
# The rung in a test's name: short, so a test's line fits a terminal (the ladder
# under each explanation says which switch selects it).
TEST_RUNGS: dict[str, str] = {"generic": "generic interpreter", "tpu-interpret": "TPU interpret mode",
                              "tpu": "real TPU"}


@dataclass(frozen=True)
class FindingKind:
    id: str
    title: str
    summary: str


_KINDS = (
    FindingKind("submission-error", "Submission cannot be graded",
                "missing file or function, syntax/import error, exception, wrong output "
                "shape/dtype/type, timeout, memory limit"),
    FindingKind("wrong-result", "Wrong result",
                "wrong on every rung alike: a logic error; the arithmetic on the interpreters "
                "is real, so it is wrong on a chip too"),
    FindingKind("numerics", "Numerical problem",
                "wrong through floating point: overflow/NaN from an unstable formula, "
                "low-precision accumulation"),
    FindingKind("out-of-bounds", "Out-of-bounds access",
                "reads or writes outside an array: an index map that addresses a block past "
                "the end (or before the start), a DMA or pl.ds slice past the edge"),
    FindingKind("output-block-revisit", "Output block revisited",
                "an output block is written at grid points that are not consecutive, or "
                "across a parallel axis"),
    FindingKind("uninitialized-memory", "Depends on uninitialized memory",
                "the result depends on memory the kernel never wrote: an accumulator never "
                "zeroed, an output block never written"),
    FindingKind("grid-order-dependence", "Depends on grid order",
                "the result changes when grid points run in another order or on two cores"),
    FindingKind("padding-dependence", "Depends on edge-block padding",
                "the result depends on the padding of partial edge blocks"),
    FindingKind("data-race", "Data race", "the race detector found conflicting accesses"),
    FindingKind("dma-protocol", "DMA or semaphore misuse",
                "a DMA or semaphore is misused: waited before started, never waited, buffer "
                "reused while in flight, deadlock"),
    FindingKind("compile-reject", "The TPU compiler will refuse it",
                "block tiling, dtype or an unsupported op, though both interpreters run it"),
    FindingKind("vmem-overflow", "Blocks overflow VMEM",
                "blocks plus scratch exceed the target chip's VMEM at the real problem size"),
    FindingKind("inconsistent-kernel", "A different kernel at other sizes",
                "at a size no test runs (production, speed, stress) the function builds a kernel "
                "the tests did not grade, or (at a stress input) the graded kernel in other dtypes"),
    FindingKind("not-a-kernel", "Work done outside the kernel",
                "the work is not done in a pallas_call (jnp outside the kernel, the "
                "reference called)"),
    FindingKind("chip-reject", "Refused by the TPU compiler", "on a real TPU the compiler refused it"),
    FindingKind("chip-divergence", "Chip result differs",
                "on a real TPU the compiled result differs from the interpreters'"),
)
CATALOGUE: dict[str, FindingKind] = {k.id: k for k in _KINDS}

# Root-cause order: when several findings hit one test, the earliest here is the
# primary one (an out-of-bounds map explains the wrong numbers it causes).
PRECEDENCE: tuple[str, ...] = (
    "submission-error", "not-a-kernel", "inconsistent-kernel", "out-of-bounds", "output-block-revisit",
    "dma-protocol", "data-race", "uninitialized-memory", "padding-dependence",
    "grid-order-dependence", "compile-reject", "vmem-overflow", "chip-reject",
    "numerics", "wrong-result", "chip-divergence",
)
assert set(PRECEDENCE) == set(CATALOGUE), "every ID needs a place in PRECEDENCE"


class FrozenMap(tuple):
    """An immutable mapping stored as a tuple of (key, value) pairs."""

    __slots__ = ()


def _freeze(value: Any) -> Any:
    """Evidence must be JSON-like and immutable, so a finding can be shared freely."""
    if isinstance(value, Mapping):
        return FrozenMap((str(k), _freeze(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"finding evidence must be JSON-like; got {type(value).__name__}: {value!r}")


@dataclass(frozen=True)
class Finding:
    """One observation about a submission.

    ``id``: catalogue ID; ``rung``: where it was seen; ``case``: the test case
    name or None for submission-wide findings; ``message``: one plain sentence;
    ``evidence``: structured facts for templates (frozen key/value pairs);
    ``check``: the check that produced it; ``run``: the plan index of the run
    it was seen on (the report reads that run's seed and parameters), if any.
    """

    id: str
    rung: str
    message: str
    case: str | None = None
    check: str = "correctness"
    evidence: FrozenMap = field(default=FrozenMap())
    run: int | None = None

    def __post_init__(self) -> None:
        if self.id not in CATALOGUE:
            raise ValueError(f"finding ID must be one of the catalogue; got {self.id!r}")
        if self.rung not in RUNGS:
            raise ValueError(f"finding rung must be one of {list(RUNGS)}; got {self.rung!r}")
        if not isinstance(self.evidence, FrozenMap):
            object.__setattr__(self, "evidence", _freeze(dict(self.evidence)))

    @classmethod
    def make(cls, id: str, rung: str, message: str, *, case: str | None = None,
             check: str = "correctness", run: int | None = None, **evidence: Any) -> "Finding":
        return cls(id=id, rung=rung, message=message, case=case, check=check,
                   evidence=_freeze(evidence), run=run)

    @property
    def kind(self) -> FindingKind:
        return CATALOGUE[self.id]

    def facts(self) -> dict[str, Any]:
        """Evidence as plain nested dicts/lists for templates and JSON."""
        return _thaw(self.evidence)

    def with_facts(self, **more: Any) -> "Finding":
        """This finding with more (or replaced) evidence."""
        return replace(self, evidence=_freeze({**self.facts(), **more}))

    @property
    def problem(self) -> str | None:
        """The kind of submission-error (or probe outcome) this is, if it says."""
        return dict(self.evidence).get("problem")


def _thaw(value: Any) -> Any:
    if isinstance(value, FrozenMap):
        return {k: _thaw(v) for k, v in value}
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    return value


def primary(findings: list[Finding]) -> Finding | None:
    """The root cause among findings for one test: the first by PRECEDENCE."""
    if not findings:
        return None
    return min(findings, key=lambda f: PRECEDENCE.index(f.id))


# The one-line fix the report's problem list gives; the finding's own section
# gives the full fix with its evidence.
FIXES: dict[str, str] = {
    "wrong-result": "compare your kernel's formula with the handout's on the smallest case",
    "numerics": "accumulate in float32 and keep intermediates in a stable range",
    "out-of-bounds": "make the grid pl.cdiv(size, block) long and keep every index map inside its array",
    "output-block-revisit": "put the axis that revisits an output block last and mark it \"arbitrary\"",
    "uninitialized-memory": "zero accumulators at the first step and write every output block in full",
    "grid-order-dependence": "mark an axis \"parallel\" only when no grid point depends on another along it",
    "padding-dependence": "mask the padded part of edge blocks before it reaches a valid result",
    "data-race": "never let two grid points on a parallel axis write the same block",
    "dma-protocol": "start every copy before waiting on it, and wait on each copy once",
    "compile-reject": "use blocks whose last two dimensions are multiples of (8, 128)",
    "vmem-overflow": "use fixed block sizes that fit VMEM at the real problem size",
    "not-a-kernel": "do the assignment's work inside the kernel passed to pl.pallas_call",
    "inconsistent-kernel": "build the graded kernel at every size, in the same dtypes (only its numbers may "
                           "follow the shape)",
    "chip-reject": "see the compiler's message for the construct it refused",
    "chip-divergence": "compare the chip's output with the interpreters' on the failing case",
    "submission-error": "make the file import and run on its own (see the details)",
}
# The compile check's fix, by the rule the lowering refused (its rule_id).
COMPILE_FIXES: dict[str, str] = {
    "block-tiling": FIXES["compile-reject"],
    "unsupported-op": "compute with the operations the TPU lowering implements inside kernels "
                      "(no sort or cumsum in a kernel)",
    "64-bit-dtype": "use float32 or int32 inside the kernel, not 64-bit types",
    "1d-block": "give a 1-D block the whole array, or a multiple of 1024 elements",
    "buffer-count": "ask for at most two buffers per BlockSpec: pl.Buffered(1) or pl.Buffered(2)",
    "matmul-accumulator": "give the product a float32 result: pass preferred_element_type=jnp.float32 to "
                          "jnp.dot (or lax.dot_general), and cast it where you store it",
    "lowering": "change what the compiler's message names; the interpreters cannot check it",
}
SUBMISSION_FIXES: dict[str, str] = {
    "file-missing": "upload the file with the name the handout gives",
    "syntax-error": "run the file locally and correct the line shown",
    "import-error": "make the file import on its own, without files you did not upload",
    "function-missing": "define the function the handout names, at the top level of the file",
    "wrong-arity": "give the function exactly the handout's arguments",
    "not-implemented": "replace the starter's raise NotImplementedError with your kernel",
    "exception": "run the case locally (see the reproduction) and fix the error shown",
    "timeout": "look for a loop that never ends or a DMA wait that nothing starts",
    "import-timeout": "remove slow work done at import time",
    "memory-limit": "avoid huge intermediate arrays",
    "wrong-shape": "return the pallas_call's output with the handout's shape",
    "wrong-dtype": "set out_shape's dtype as the handout says",
    "wrong-type": "return one array, not a tuple or a NumPy value",
    "killed": "do not call exit() or os._exit()",
    "exit-at-import": "do not call exit() or os._exit()",
    "unsupported": "use the operations the handout shows",
}


def fix_line(f: Finding) -> str:
    if f.id == "submission-error":
        return SUBMISSION_FIXES.get(f.problem or "", FIXES["submission-error"])
    if f.id == "compile-reject":
        return COMPILE_FIXES.get(f.facts().get("rule_id") or "", FIXES[f.id])
    if f.id == "padding-dependence" and f.problem == "input-padding":
        return INPUT_PADDING_FIX
    return FIXES[f.id]


# Padding past the end of an input, summed by a reduction along that axis (a K block in a
# matmul): the output's edge blocks are whole, so "mask edge blocks" would not say where.
INPUT_PADDING_FIX = ("mask the padding of an input's partial block before the reduction sums it, or use a "
                     "block size that divides that axis")


@dataclass(frozen=True)
class CheckNote:
    """A probe check that could not run for a reason that is not the student's
    (the grader ran out of time, or failed itself): it costs nothing, and says so."""
    probe: str
    case: str
    text: str
    ran: bool = False        # the check ran and found what costs nothing (not: it could not run)
