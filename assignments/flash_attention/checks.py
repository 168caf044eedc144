"""Custom checks for `flash_attention` (run on Gradescope against the rebuilt kernel).

Properties of attention that hold for any inputs, so they need no reference:
when every key is the same, each query attends uniformly and gets the mean of
the values; when every value row is the same vector, so is every output row.
Both need the running sum combined across key blocks (a kernel that normalises
each key block on its own, or drops all but the last, fails them).
"""
import numpy as np
from gradescope_utils.autograder_utils.decorators import number, weight

from autograder import KernelTestCase


class AttentionProperties(KernelTestCase):
    def _inputs(self, seed: int):
        (shape, dtype), _k, _v = self.signatures[0]
        rng = np.random.default_rng(seed)
        return [rng.standard_normal(shape).astype(dtype) for _ in range(3)], shape, dtype

    @weight(1)
    @number("C1")
    def test_identical_keys_give_the_mean_of_the_values(self):
        """Identical keys: every query gets the mean of the values"""
        (q, _k, v), shape, dtype = self._inputs(1)
        k = np.broadcast_to(np.random.default_rng(2).standard_normal(shape[-1]), shape).astype(dtype)
        want = np.broadcast_to(v.astype(np.float64).mean(axis=1, keepdims=True), shape)
        for rung in self.rungs:
            with self.subTest(rung=rung):
                np.testing.assert_allclose(self.kernel(q, k, v, rung=rung), want, rtol=1e-4, atol=1e-4)

    @weight(1)
    @number("C2")
    def test_identical_values_pass_through(self):
        """Identical value rows: every output row is that row"""
        (q, k, _v), shape, dtype = self._inputs(3)
        v = np.broadcast_to(np.random.default_rng(4).standard_normal(shape[-1]), shape).astype(dtype)
        for rung in self.rungs:
            with self.subTest(rung=rung):
                np.testing.assert_allclose(self.kernel(q, k, v, rung=rung), v, rtol=1e-4, atol=1e-4)
