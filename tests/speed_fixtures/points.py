"""Published Pallas TPU timings and the kernels that produced them: the speed
model's fit points (the matmul guide's bf16 table, the only points its fitted
constants saw) and its validation points (everything else). Each point builds
the function to trace and its arguments: shapes for the data, concrete arrays
for the scalar-prefetch tables the published run used.

Every time here is a wall-clock mean around ``jax.block_until_ready`` in the
source's own timing loop (the guides: ``timeit``, 100 calls after a warm-up;
axlearn: 5 calls after a warm-up, printed to 0.1 ms), so each includes the
per-call dispatch the model's launch cost stands for.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable

import jax
import jax.numpy as jnp

from . import kernels

MATMUL_GUIDE = "Pallas TPU matmul guide (docs.jax.dev/en/latest/pallas/tpu/matmul.html)"
SPARSE_GUIDE = "Pallas TPU sparse guide (docs.jax.dev/en/latest/pallas/tpu/sparse.html)"
AXLEARN = "axlearn TPU flash-attention benchmark (github.com/apple/axlearn, commit 0728da17)"


@dataclass(frozen=True)
class Point:
    source: str
    table: str                 # configurations that must rank in the measured order
    chip: str
    kernel: str
    dtype: str
    shape: str
    blocks: str
    measured_s: float
    role: str                  # "fit": the constants were fitted to it; "validation": never
    build: Callable[[], tuple[Callable, list[Any]]]


def _matmul(n: int, blocks: tuple[int, int, int], **variant) -> Callable:
    bm, bk, bn = blocks

    def build():
        x = jax.ShapeDtypeStruct((n, n), jnp.bfloat16)
        return functools.partial(kernels.guide_matmul, bm=bm, bk=bk, bn=bn, **variant), [x, x]
    return build


# (bm, bk, bn), size -> seconds; v5e, bf16 in and out (the guide's cells RjU3sSTUWzIk,
# AcBMHhKLhkDp and BOu7WBCBlHpN; unchanged since jax commit 39ec5dac, July 2024).
_PLAIN = {((128, 128, 128), 1024): 0.00029766598949208854, ((128, 128, 128), 4096): 0.011771515250438824,
          ((128, 128, 128), 8192): 0.09183577066054567, ((512, 1024, 1024), 1024): 0.00012708659982308746,
          ((512, 1024, 1024), 4096): 0.00088908776990138, ((512, 1024, 1024), 8192): 0.006099433819763363}
_TRANSPOSED = {((128, 128, 128), 1024): 0.0003029372810851783, ((128, 128, 128), 4096): 0.012017967159627005,
               ((128, 128, 128), 8192): 0.09500920018996112, ((512, 1024, 1024), 1024): 0.00012131539988331496,
               ((512, 1024, 1024), 4096): 0.0008790623804088682,
               ((512, 1024, 1024), 8192): 0.006107717020204291}
_RELU = {((128, 128, 128), 1024): 0.00030103540048003196, ((128, 128, 128), 4096): 0.011807117109419778,
         ((128, 128, 128), 8192): 0.09181861146935262, ((512, 1024, 1024), 1024): 0.00012622540001757442,
         ((512, 1024, 1024), 4096): 0.000896632740041241, ((512, 1024, 1024), 8192): 0.006130605939542875}


def _guide_points(table: dict, name: str, role: str, **variant) -> list[Point]:
    return [Point(MATMUL_GUIDE, name, "v5e", name, "bfloat16", f"{n}^3", "x".join(map(str, blocks)), seconds,
                  role, _matmul(n, blocks, **variant)) for (blocks, n), seconds in table.items()]


def _block_sparse() -> tuple[Callable, list[Any]]:
    # 16384^3, 512^3 blocks, block density 0.1 drawn from jax.random.key(0) (86 nonzero blocks).
    size, block = 16384, 512
    rows, cols = kernels.block_sparse_indices(size, block, 0.1)
    args = [rows, cols, jax.ShapeDtypeStruct((len(rows), block, block), jnp.bfloat16),
            jax.ShapeDtypeStruct((size, size), jnp.bfloat16), jax.ShapeDtypeStruct((size, size), jnp.bfloat16)]
    return functools.partial(kernels.block_sparse_matmul, block=block), args


def _masked() -> tuple[Callable, list[Any]]:
    # 16384^3, bm = bn = 512, bk = 1024, a lower-triangular mask (528 of 1024 output blocks computed).
    size, bm, bk, bn = 16384, 512, 1024, 512
    maps = kernels.lower_triangular_maps(size // bm)
    args = [maps["computed"], maps["kind"], maps["i"], maps["j"],
            jax.ShapeDtypeStruct((size, size), jnp.bfloat16), jax.ShapeDtypeStruct((size, size), jnp.bfloat16),
            jax.ShapeDtypeStruct((int(maps["kinds"]), bm, bn), jnp.int32)]
    return functools.partial(kernels.masked_matmul, bm=bm, bk=bk, bn=bn), args


def _flash(heads: int, dim: int) -> Callable:
    def build():
        qkv = jax.ShapeDtypeStruct((2, 2048, heads, dim), jnp.bfloat16)
        bias = jax.ShapeDtypeStruct((2, heads, 2048, 2048), jnp.bfloat16)
        return jax.jit(functools.partial(kernels.axlearn_flash_forward, block=512)), [qkv, qkv, qkv, bias]
    return build


# "Benchmarking attention representative of <model> layer on TPU v4": flash_fwd seconds, batch 2,
# sequence 2048, bf16, causal, with a bias, blocks of 512; (heads, head dim) per model size.
_FLASH = {(32, 64): 0.0012, (40, 128): 0.0016, (56, 128): 0.0022, (72, 128): 0.0028, (88, 128): 0.0035,
          (110, 128): 0.0035, (140, 128): 0.0047}

POINTS: tuple[Point, ...] = (
    *_guide_points(_PLAIN, "matmul", "fit"),
    *_guide_points(_TRANSPOSED, "matmul, RHS transposed", "validation", transpose_rhs=True),
    *_guide_points(_RELU, "matmul, relu epilogue", "validation", activation=jax.nn.relu),
    # Cells CkzjqnekpZbx and MAT9JjGNvsx8, run on a "TPU v5 lite" in September 2024.
    Point(SPARSE_GUIDE, "sparse", "v5e", "block-sparse x dense (10% of blocks)", "bfloat16", "16384^3",
          "512x512x512", 8.136e-3, "validation", _block_sparse),
    Point(SPARSE_GUIDE, "sparse", "v5e", "dense x dense, lower-triangular output mask", "bfloat16", "16384^3",
          "512x1024x512", 28.648e-3, "validation", _masked),
    *(Point(AXLEARN, "flash attention", "v4", f"flash attention forward, causal, bias, {h} heads x {d}",
            "bfloat16", "2x2048", "512x512", seconds, "validation", _flash(h, d))
      for (h, d), seconds in _FLASH.items()),
)
