"""Reference for `dma_scale`: float64 numpy, run by the grader (never by the student's process)."""
import numpy as np


def dma_scale(x: np.ndarray, alpha: float) -> np.ndarray:
    return float(alpha) * x.astype(np.float64)
