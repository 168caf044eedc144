"""The TPU time estimate: the model on synthetic schedules (no JAX), its
validation against published Pallas TPU timings, and the `estimate` verb
through the tracer and the grader's child (jax)."""
import functools
import json

import pytest
from conftest import CORPUS, REPO, run_cli

from autograder.pallas_surface.facts import decode
from autograder.speed import model as speed

V5E = {"chip": "v5e", "hbm_bytes_per_s": 820_000_000_000, "bf16_flops_per_s": 197_000_000_000_000,
       "vmem_bytes": 128 << 20, "lanes": 128, "sublanes": 8, "mxus": 4}


def _facts(steps: int, flops: float, moves: tuple[int, int, int], block: int, array: int):
    side = int((array // 2) ** 0.5)
    ops = [{"operand": f"input {i}", "is_output": False, "pipelined": True, "block": [block, block],
            "block_bytes": block * block * 2, "moves": m, "array_bytes": array, "shape": [side, side]}
           for i, m in enumerate(moves[:2])]
    ops.append({"operand": "output 0", "is_output": True, "pipelined": True, "block": [block, block],
                "block_bytes": block * block * 2, "moves": moves[2], "array_bytes": array, "shape": [side, side]})
    return decode("speed", {"chip": V5E, "pallas_calls": 1,
                            "calls": [{"grid": [steps], "steps": steps, "operands": ops, "dtype": "bfloat16",
                                       "per_step": {"flops": flops, "vector": 0.0, "transcendental": 0.0,
                                                    "dma_bytes": 0.0}}]})


def test_small_blocks_are_bound_by_the_per_step_overhead_and_say_so():
    e = speed.estimate(_facts(32768, 2 * 128 ** 3, (32768, 32768, 1024), 128, 4096 * 4096 * 2))
    assert e.bound == "per-step overhead" and e.grid_steps == 32768
    assert "32,768 grid steps" in e.advice and "use larger blocks" in e.advice
    assert e.seconds >= e.floor_seconds and e.min_hbm_bytes == 3 * 4096 * 4096 * 2


def test_an_operand_moved_many_times_its_size_is_named_and_the_floor_holds():
    # One step's work is tiny, the blocks large: memory-bound, input 1 moved 64 times its size.
    e = speed.estimate(_facts(64, 1.0, (1, 64, 1), 1024, 1024 * 1024 * 2))
    assert e.bound == "memory" and e.advice.startswith("input 1 is moved 64.0 times its size")
    assert e.hbm_bytes == 66 * 1024 * 1024 * 2
    flat = speed.estimate(_facts(1, 2.0e12, (1, 1, 1), 1024, 1024 * 1024 * 2))
    assert flat.bound == "compute" and flat.seconds >= flat.floor_seconds >= 2.0e12 / V5E["bf16_flops_per_s"]


# The Pallas TPU guide's matmul (docs.jax.dev, pallas/tpu/matmul.html, "Matrix
# multiplication performance"), bf16 on a TPU v5e: (bm, bk, bn), size -> seconds.
PUBLISHED = {((128, 128, 128), 1024): 0.00029766598949208854,
             ((128, 128, 128), 4096): 0.011771515250438824,
             ((128, 128, 128), 8192): 0.09183577066054567,
             ((512, 1024, 1024), 1024): 0.00012708659982308746,
             ((512, 1024, 1024), 4096): 0.00088908776990138,
             ((512, 1024, 1024), 8192): 0.006099433819763363}
MAX_ERROR = 0.10


def _guide_matmul(x, y, *, bm, bk, bn):
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu

    def kernel(x_ref, y_ref, z_ref, acc_ref, *, nsteps):
        @pl.when(pl.program_id(2) == 0)
        def _():
            acc_ref[...] = jnp.zeros_like(acc_ref)

        acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

        @pl.when(pl.program_id(2) == nsteps - 1)
        def _():
            z_ref[...] = acc_ref[...].astype(z_ref.dtype)

    m, k = x.shape
    n = y.shape[1]
    return pl.pallas_call(
        functools.partial(kernel, nsteps=k // bk),
        grid_spec=pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=0,
            in_specs=[pl.BlockSpec((bm, bk), lambda i, j, k: (i, k)),
                      pl.BlockSpec((bk, bn), lambda i, j, k: (k, j))],
            out_specs=pl.BlockSpec((bm, bn), lambda i, j, k: (i, j)),
            scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)], grid=(m // bm, n // bn, k // bk)),
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "arbitrary")),
    )(x, y)


@pytest.mark.jax
def test_the_model_reproduces_the_published_pallas_matmul_timings_and_their_order():
    import jax
    import jax.numpy as jnp

    from autograder.pallas_surface import cost, rung
    got = {}
    for (blocks, n), published in PUBLISHED.items():
        bm, bk, bn = blocks
        args = [jax.ShapeDtypeStruct((n, n), jnp.bfloat16)] * 2
        with rung.tpu_target():
            traced = rung.trace(functools.partial(_guide_matmul, bm=bm, bk=bk, bn=bn), args)
        got[(blocks, n)] = speed.estimate(decode("speed", cost.speed_facts(traced, "v5e"))).seconds
        error = got[(blocks, n)] / published - 1
        print(f"{blocks} {n}^3: estimated {got[(blocks, n)] * 1e3:.4f} ms, published {published * 1e3:.4f} ms, "
              f"error {error:+.1%}")
        assert abs(error) <= MAX_ERROR, (blocks, n, error)
    assert sorted(got, key=got.get) == sorted(PUBLISHED, key=PUBLISHED.get)


@pytest.mark.jax
@pytest.mark.grading
def test_estimate_through_the_tracer_and_the_graders_child():
    proc = run_cli("estimate", str(REPO / "solutions" / "matmul.py"), "-a", "matmul", "--json",
                   "--size", "M=4096,K=4096,N=4096")
    assert proc.returncode == 0, proc.stderr[-2000:]
    e = json.loads(proc.stdout)
    assert {"seconds", "bound", "hbm_bytes", "min_hbm_bytes", "flops", "grid_steps", "chip"} <= set(e)
    assert e["chip"] == "v5e" and e["dims"] == {"K": 4096, "M": 4096, "N": 4096} and e["dtype"] == "bfloat16"
    assert e["flops"] == 2 * 4096 ** 3 and e["seconds"] >= e["floor_seconds"] > 0
    text = run_cli("estimate", str(REPO / "solutions" / "add.py"), "-a", "add", "--chip", "v6e")
    assert text.returncode == 0 and "Estimated time on a TPU v6e" in text.stdout and "HBM traffic" in text.stdout
    none = run_cli("estimate", str(CORPUS / "add" / "syntax_error.py"), "-a", "add")
    assert none.returncode == 1 and "no estimate: " in none.stderr and "syntax" in none.stderr.lower()
    bad = run_cli("estimate", str(REPO / "solutions" / "add.py"), "-a", "add", "--size", "M=12")
    assert bad.returncode == 1 and "M=12 breaks the spec's rule" in bad.stderr
