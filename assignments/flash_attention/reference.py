"""Reference for `flash_attention`: float64 numpy, run by the grader (never by the student's process)."""
import numpy as np


def flash_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ v


# Mistakes seen in students' kernels, which the grader recognises by their result
# (autograder/spec/mistakes.py): when a failing kernel's output on a visible case is
# what one computes, its fix is shown. They choose the fix's words, never a score.

def _causal(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    s = np.where(np.tril(np.ones(s.shape[-2:], dtype=bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ v


def _online(q: np.ndarray, k: np.ndarray, v: np.ndarray, bk: int, update) -> tuple[np.ndarray, np.ndarray]:
    """The online softmax over key blocks of ``bk``: (running sum, accumulator) after the
    last block, each block's update of them given as ``update(c, p, l, acc, pv)`` where
    c = exp(m_old - m_new), p = exp(s - m_new) and pv = p·v."""
    s_all = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    m = np.full(s_all.shape[:-1] + (1,), -np.inf)
    l, acc = np.zeros_like(m), np.zeros(q.shape)
    for j in range(0, k.shape[1], bk):
        s = s_all[..., j:j + bk]
        m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
        c, p = np.exp(m - m_new), np.exp(s - m_new)
        l, acc = update(c, p, l, acc, p @ v[:, j:j + bk])
        m = m_new
    return l, acc


def _normalised_every_block(q: np.ndarray, k: np.ndarray, v: np.ndarray, *, blocks) -> np.ndarray:
    """The accumulator divided by the running sum at every key block and the next block's
    rescale leaving that sum out (acc = (c·acc + p·v) / l), stored as it is."""
    def update(c, p, l, acc, pv):
        l = c * l + p.sum(axis=-1, keepdims=True)
        return l, (c * acc + pv) / l
    return _online(q, k, v, blocks["k"][1], update)[1]


def _accumulator_not_rescaled(q: np.ndarray, k: np.ndarray, v: np.ndarray, *, blocks) -> np.ndarray:
    """The running sum rescaled by exp(m_old - m_new) at every key block and the
    accumulator not (acc = acc + p·v)."""
    l, acc = _online(q, k, v, blocks["k"][1], lambda c, p, l, acc, pv: (c * l + p.sum(axis=-1, keepdims=True),
                                                                       acc + pv))
    return acc / l


MISTAKES = {
    "a causal mask": {
        "compute": _causal,
        "fix": "this assignment's attention is not causal: every query attends to every key, the later ones "
               "too. Remove the mask that hides keys after the query's position.",
        "at": "where",
    },
    "the accumulator divided at every key block": {
        "compute": _normalised_every_block,
        "fix": "the accumulator is divided by the running sum at every key block, but the next block's rescale "
               "multiplies it only by exp(m_old - m_new), so the old sum is lost. Keep the accumulator "
               "undivided and divide acc / l once, at the last key block.",
        "at": "division",
    },
    "the accumulator never rescaled": {
        "compute": _accumulator_not_rescaled,
        "fix": "when a key block raises the running max, the running sum is rescaled by exp(m_old - m_new) but "
               "the accumulator is not, so its earlier blocks keep their old, larger weights. Multiply the "
               "accumulator by the same exp(m_old - m_new) before adding this block's p·v.",
        "at": "accumulator",
    },
}
