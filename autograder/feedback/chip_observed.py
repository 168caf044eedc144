"""What a real TPU did with each class of bug: the "real TPU" line of every
finding's ladder (pure data).

Observed on a real TPU v5e (one TensorCore; jax 0.10.2, libtpu 0.0.42.1) by the
chip check of 2026-12-06 (``benchmarks/chip_check.py``, outcomes phase): every
solution and corpus kernel compiled by Mosaic and run at its assignment's
visible cases (docs/chip-outcomes.md lists each). Where a line says what other
chips do, it cites the document; where nothing backs it, it says so. A line
never promises more than the chip showed: a bug the v5e ran right is latent
there, and the charge stands.
"""
from __future__ import annotations

SOURCE = "observed on a real TPU v5e, jax 0.10.2 (docs/chip-outcomes.md)"

TPU = {
    "out-of-bounds": (
        "the core halts: on a real v5e every out-of-bounds block or DMA index in the corpus stopped it "
        "(RuntimeUnexpectedCoreHalt, \"BoundsCheck ... dma.hbm_to_vmem\"), and the process could use the "
        "chip no more"),
    "dma-protocol": (
        "a DMA started and never waited halted a real v5e's core (\"Semaphore ... has a nonzero value upon "
        "exit\"); a wait on a DMA never started hangs it for good; a buffer refilled before use or a shared "
        "semaphore gave right values there by the DMA's timing alone (latent: the charge stands)"),
    "data-race": (
        "a real v5e has one TensorCore and runs the grid in order: both corpus races gave right values there "
        "(latent); megacore chips (v4, v5p) split 'parallel' axes over two TensorCores (JAX's Pallas TPU "
        "pipelining guide), where the race can show: not run on one here"),
    "grid-order-dependence": (
        "a real v5e runs the grid in order on one core: the corpus kernels that need an order gave right "
        "values there (latent); megacore chips split 'parallel' axes over two cores (JAX's Pallas TPU "
        "pipelining guide): not run on one here"),
    "output-block-revisit": (
        "on a real v5e a revisit after another block gave wrong values (the K axis outermost, a tile order "
        "that repeats a tile); one across a 'parallel' axis ran right there in order (latent), and is a race "
        "where a megacore chip splits that axis"),
    "uninitialized-memory": (
        "memory nothing wrote holds whatever it holds: on a real v5e five of the corpus kernels gave wrong "
        "values and two happened to be right at the visible cases (latent: the charge stands)"),
    "padding-dependence": (
        "the padding of a partial block holds whatever it holds: on a real v5e the corpus kernel overflowed "
        "to inf at the case with a partial block"),
    "numerics": (
        "the chip rounds as the interpreters do or worse (its exp, log and tanh were measured less exact than "
        "XLA's on a CPU): the corpus overflows gave inf on a real v5e too"),
    "wrong-result": "a real v5e computed the same wrong values for every corpus kernel charged this",
    "compile-reject": (
        "a real v5e's compiler refused every corpus kernel charged this (the block-tiling rule; a 16-bit "
        "matmul result: \"Expected matmul acc to be 32-bit\")"),
    "vmem-overflow": (
        "a real v5e refused to compile blocks and scratch over its 16 MiB of scoped VMEM "
        "(CompileTimeScopedVmemOom); at the visible cases' small sizes the same kernels ran"),
    "not-a-kernel": "the chip runs work outside a kernel as ordinary XLA: no question for the TPU compiler",
    "inconsistent-kernel": "not a question for the chip: which program a size builds is decided before it runs",
    "submission-error": "nothing reaches the chip until the submission loads and traces",
}


def line(finding_id: str) -> str:
    """The "real TPU" line for a finding, with its source; says so where the chip was not asked."""
    text = TPU.get(finding_id)
    if text is None:
        return "not run on a real TPU for this class (no chip observation backs a claim here)"
    return f"{text} ({SOURCE})"
