"""Bug: allocates ~2 GB at import (the child's memory limit is far lower)."""
import numpy as np

HOG = np.ones((2 * 1024 ** 3 // 8,), dtype=np.float64)


def add(x, y):
    return x + y
