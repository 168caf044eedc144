"""Reference for `softmax`: float64 numpy, run by the grader (never by the student's process)."""
import numpy as np


def softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
