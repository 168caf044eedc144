"""What memory a kernel never wrote holds in each run: fills drawn from the
grading's secret run key (pure data; no JAX).

Every kernel run of a grading fills unwritten float memory (outputs, scratch,
the padding of partial blocks) with values drawn element by element
(``pallas_surface.hooks.fill_values``): each buffer gets values of its own,
of random sign and magnitude, some NaN or infinite. So a test run and a probe
run look alike to a kernel: neither a value, a range nor a comparison of two
buffers says which run it is in, or which memory is unwritten.

- ``test_fill``: every correctness run and every probe run that varies
  something else (the grid order, the race detector, the DMA mode, a stress
  input): one fill, so that the probe's difference is its own.
- ``poisoning_fills``: the poisoning probe's other fills; an output that
  changes between them and the test's depends on memory the kernel never wrote.
- ``unwritten_fills``: a failing test's two reruns on the generic interpreter
  (``grading.unwritten``): the same values, the second times ``UNWRITTEN_SCALE``
  (a power of two, so exact), all finite, from 1 to 1e15 (``UNWRITTEN_DECADES``),
  the first's all positive (so the second's are all negative). An element that holds the first rerun's value
  times the scale in the second holds the fill itself: it was never stored. And
  padding that is all negative is what a max over it cannot see: a kernel whose
  result depends on its padding (an unmasked max) is right with one of them,
  one whose result is wrong whatever the padding holds is right with neither.
  These reruns run only for a test that already failed, to say why: they never
  decide a pass.
"""
from __future__ import annotations

from dataclasses import dataclass

FILL_STREAM = 0xF111         # the run key's stream the fills are drawn from
UNWRITTEN_SCALE = -1.0 / 128.0
# The reruns' magnitudes: 1 to 1e15. Large enough that an all-positive padding tops
# any row's data (logits scaled by 1000: a max over padding shows), small enough that a
# sum of padding times padding (a K block past the end of K: 128 products of up to
# 1e30) stays finite in float32, so the padding's rerun changes the outputs it reaches
# instead of making every rerun infinite alike (1e30 squared overflows float32).
UNWRITTEN_DECADES = (0.0, 15.0)
POISONING = 1                # the poisoning probe's fills beside the test's (each varies element by element)


@dataclass(frozen=True)
class Fill:
    """One run's fill: a name for people, and what the child draws it from."""
    name: str
    seed: tuple[int, ...]        # 32-bit words
    scale: float = 1.0
    finite: bool = False
    positive: bool = False       # every value positive (before the scale)
    decades: tuple[float, float] | None = None    # the magnitudes' span (None: the child's, 1e-12 to 1e30)

    def to_child(self) -> dict:
        spec = {"seed": list(self.seed), "scale": self.scale, "finite": self.finite, "positive": self.positive}
        return spec if self.decades is None else {**spec, "decades": list(self.decades)}


def _seed(run_key: int, index: int) -> tuple[int, ...]:
    return (run_key & 0xFFFFFFFF, (run_key >> 32) & 0xFFFFFFFF, FILL_STREAM, index)


def test_fill(run_key: int) -> Fill:
    return Fill("fill-1", _seed(run_key, 1))


def poisoning_fills(run_key: int) -> tuple[Fill, ...]:
    return tuple(Fill(f"fill-{k}", _seed(run_key, k)) for k in range(2, 2 + POISONING))


def unwritten_fills(run_key: int) -> tuple[Fill, Fill]:
    seed = _seed(run_key, 0x5AFE)
    return (Fill("fill-a", seed, 1.0, True, True, UNWRITTEN_DECADES),
            Fill("fill-b", seed, UNWRITTEN_SCALE, True, True, UNWRITTEN_DECADES))
