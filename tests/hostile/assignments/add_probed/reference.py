"""Reference for `add`: float64 numpy, run by the grader (never by the student's process)."""
import numpy as np


def add(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return x.astype(np.float64) + y.astype(np.float64)
