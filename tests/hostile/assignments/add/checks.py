"""The hostile corpus's custom check: its expected value is a secret marker."""
import numpy as np

from autograder import KernelTestCase

EXPECTED = "CHECKS-SECRET-4d1e"


class Secret(KernelTestCase):
    def test_kernel_runs(self):
        """the kernel runs under the instructor's check"""
        (shape, dtype), _ = self.signatures[0]
        x = np.ones(shape, dtype)
        out = self.kernel(x, x)
        assert out.shape == shape and EXPECTED
