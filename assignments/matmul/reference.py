"""Reference for `matmul`: float64 numpy, run by the grader (never by the student's process)."""
import numpy as np


def matmul(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return x.astype(np.float64) @ y.astype(np.float64)


# Mistakes seen in students' kernels, which the grader recognises by their result
# (autograder/spec/mistakes.py): when a failing kernel's output on a visible case is
# what one computes, its fix is shown. They choose the fix's words, never a score.

def _y_blocks_transposed(x: np.ndarray, y: np.ndarray, *, blocks) -> np.ndarray:
    """x's (bm, bk) blocks times the transpose of y's (bk, bn) blocks, summed over K:
    what ``jnp.dot(x_ref[...], y_ref[...].T)`` gives where square blocks hide the shapes."""
    bk, bn = blocks["y"]
    if blocks["x"][1] != bk or bk != bn:
        raise ValueError("only square y blocks (bk == bn) make this product")
    x, y = x.astype(np.float64), y.astype(np.float64)
    out = np.zeros((x.shape[0], y.shape[1]))
    for k in range(0, y.shape[0], bk):
        for j in range(0, y.shape[1], bn):
            out[:, j:j + bn] += x[:, k:k + bk] @ y[k:k + bk, j:j + bn].T
    return out


def _last_k_block_only(x: np.ndarray, y: np.ndarray, *, blocks) -> np.ndarray:
    """The last K block's product alone: an accumulator overwritten (``=``) at every K
    step where it is added to (``+=``)."""
    bk = blocks["x"][1]
    last = (x.shape[1] - 1) // bk * bk
    return x[:, last:].astype(np.float64) @ y[last:].astype(np.float64)


MISTAKES = {
    "each block of y transposed": {
        "compute": _y_blocks_transposed,
        "fix": "the product multiplies x's block by y's block transposed (y_ref[...].T): y's block is already "
               "(K, N) as the product needs it, so use it as it is. Square blocks hide the mistake from the "
               "shapes; the values show it.",
        "at": "dot",
    },
    "the last K block's product only": {
        "compute": _last_k_block_only,
        "fix": "each K step overwrites the accumulator with its own block's product (acc = ...) where it should "
               "add to it (acc += ...): only the last K block survives. Add each step's product to the "
               "accumulator.",
        "at": "accumulator",
    },
}
