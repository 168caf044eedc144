"""Not a kernel: returns alpha * x computed with jax.numpy, with no pallas_call
at all (the grader's trace counts 0 pallas_calls). Measured: correct numbers
on every case and rung (the interpreters never run). Only a not-a-kernel
check can catch it (none exists yet)."""
import jax.numpy as jnp


def dma_scale(x, alpha):
    return (alpha * x).astype(jnp.float32)
