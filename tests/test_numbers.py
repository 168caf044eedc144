"""Sizes no test runs: a graded kernel's face vouches for them; their frame's
numbers are free (checked at the size), their body's integers and every dtype
follow the graded sizes' rules or say why (``grading.numbers``, ``grading.faces``)."""
import importlib.util
import json
from pathlib import Path

import pytest

from autograder.grading import assignments
from autograder.grading.identity import canonical, numbers
from autograder.grading.run import plan as planning

REPO = Path(__file__).resolve().parent.parent
ATTACKS = REPO / "tests" / "hostile" / "attacks"


def _sizes(points):
    return [({"M": m, "K": k}, v) for (m, k), v in points]


@pytest.mark.parametrize("points,ok", [
    ([((256, 384), 128), ((384, 512), 128), ((8192, 8192), 128)], True),           # a constant
    ([((256, 384), 128), ((384, 512), 128), ((8192, 8192), 512)], False),          # a constant, changed
    ([((256, 384), 2), ((384, 512), 3), ((8192, 8192), 64)], True),                # M // 128
    ([((256, 384), 2), ((384, 512), 3), ((8192, 8192), 1)], False),                 # one grid step
    ([((256, 384), 2), ((384, 512), 3), ((8192, 8192), 63)], True),                 # M // 128 - 1
    ([((256, 384), 256), ((384, 512), 384), ((8192, 8192), 512)], True),            # min(M, 512)
    ([((256, 384), 256), ((384, 512), 384), ((8192, 8192), 128)], False),          # min(M, c): no c
    ([((256, 384), 128), ((256, 512), 512), ((8192, 8192), 512)], True),           # a power of two dividing K
    ([((256, 384), 3), ((384, 512), 4), ((8192, 8192), 64)], True),                 # cdiv(K, 128)
    ([((20, 384), 16), ((37, 512), 32), ((203, 8192), 200), ((64, 8), 64)], True),  # (M // 8) * 8
    ([((20, 384), 24), ((37, 512), 40), ((203, 8192), 208), ((64, 8), 64)], True),  # cdiv(M, 8) * 8
    ([((20, 384), 16), ((37, 512), 24), ((203, 8192), 200), ((64, 8), 64)], False),  # not a multiple rule
    ([((20, 384), 16), ((37, 512), 40), ((64, 8), 64)], False),                      # down, then up
])
def test_an_integer_follows_one_rule_at_every_size_or_departs(points, ok):
    pts = [(numbers.Size(tuple(sorted(d.items())), "float32").quantities(), v) for d, v in _sizes(points)]
    assert numbers._integer_rule(pts) == ok


def test_a_dtype_stays_or_follows_the_case():
    f32, bf16 = numbers.Size((("M", 8),), "float32"), numbers.Size((("M", 8),), "bfloat16")
    assert numbers._dtype_rule([(f32, "dtype:float32"), (bf16, "dtype:bfloat16")])       # the case's own
    assert numbers._dtype_rule([(f32, "dtype:float32"), (bf16, "dtype:float32")])        # the same
    assert not numbers._dtype_rule([(f32, "dtype:bfloat16"), (f32, "dtype:bfloat16"), (bf16, "dtype:float32")])


# ---- traced programs (jax) -------------------------------------------------------------------

def _document(fn, a, case, path):
    import jax
    import jax.numpy as jnp

    from autograder.pallas_surface.program import schema, serial
    from autograder.pallas_surface.rungs import rung
    args, static = [], []
    for i, inp in enumerate(a.inputs):
        if inp.kind == "float":
            args.append(float(dict(case.params)[inp.name]))
            static.append(i)
        else:
            args.append(jax.ShapeDtypeStruct(tuple(a.shape(inp.shape, case)), jnp.dtype(a.dtype_of(inp.dtype, case))))
    traced = rung.trace(fn, args, static)
    return schema.loads(json.dumps(serial.encode(traced, {str(path.resolve())})).encode())


def _verdicts(slug, path):
    """Each ungraded size of ``slug`` (production, speed, stress): the departures of
    ``path``'s program there from its graded kernels (None: no graded face)."""
    from autograder.pallas_surface.rungs import hooks
    hooks.install()
    a = assignments.find(slug)
    module_spec = importlib.util.spec_from_file_location(f"numbers_{path.stem}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    fn = getattr(module, a.entry_function)

    def one(case):
        doc = _document(fn, a, case, path)
        return numbers.Size(tuple(case.dims), case.dtype), canonical.of(doc).face, numbers.of(doc)
    graded = [one(c) for c in a.cases]
    ungraded = [planning.speed_case(a, s) for s in (a.speed.sizes if a.speed else ())]
    numerics = a.probe("numerics") if any(p.name == "numerics" for p in a.probes) else None
    ungraded += [s.apply(a.case(a.probe_cases[0])) for s in (numerics.settings if numerics else ())]
    out = {}
    for case in ungraded:
        size, face, got = one(case)
        same = [(s, n) for s, f, n in graded if f == face]
        out[case.name] = [d.where for d in numbers.departures((size, got), same)] if same else None
    return out


@pytest.mark.jax
@pytest.mark.parametrize("slug,path", [
    ("matmul", "assignments/matmul/corpus/blocks_chosen_by_shape.py"),
    ("matmul", "assignments/matmul/corpus/precision_highest_f32_only.py"),
    ("matmul", "assignments/matmul/corpus/emit_pipeline_k.py"),
    ("matmul", "assignments/matmul/corpus/accumulate_in_output.py"),
    ("softmax", "assignments/softmax/corpus/specialised_on_n.py"),
    ("add", "assignments/add/corpus/unrolled_column_loop.py"),
    ("add", "assignments/add/corpus/flat_grid.py"),
])
def test_honest_specialisation_is_vouched_for_at_every_size_no_test_runs(slug, path):
    verdicts = _verdicts(slug, REPO / path)
    assert verdicts and all(v == [] for v in verdicts.values()), verdicts


@pytest.mark.jax
@pytest.mark.parametrize("slug,name,wanted", [
    ("matmul", "skips_k_blocks_at_production.py", ["a number of lt in the kernel body"]),
    # A frame's numbers (the grid, blocks, scratch) are the size's own: read there.
    ("add", "whole_array_block_at_speed_size.py", []),
    ("matmul", "small_blocks_at_production_only.py", []),
    ("matmul", "k_cut_short_at_speed_size.py", []),
    ("matmul", "misses_blocks_at_production.py", []),
])
def test_a_body_integer_departs_and_a_frame_number_is_free(slug, name, wanted):
    verdicts = _verdicts(slug, ATTACKS / name)
    prod = verdicts.get("production", verdicts.get("speed-4096x4096"))
    assert prod == wanted, verdicts


SIZED = REPO / "tests" / "sized"


@pytest.mark.jax
@pytest.mark.parametrize("slug,name", [
    ("matmul", "matmul_tile_steps.py"), ("matmul", "matmul_rows_by_256.py"), ("softmax", "softmax_mask_by_8.py"),
])
def test_tiles_and_bounds_chosen_by_the_size_follow_the_graded_rules(slug, name):
    """A tile heuristic's numbers are in the frame, and the body's derive from it; a mask
    bound rounded to a multiple of 8 is a rule of the family."""
    verdicts = _verdicts(slug, SIZED / name)
    assert verdicts and all(v == [] for v in verdicts.values()), verdicts


def test_a_body_integer_may_derive_from_the_frame():
    """A body's broadcast of (bm, bn) follows bm's slot, whatever rule picks bm."""
    frame = "/pallas_call:k#0/grid_mapping.block_mappings[0].block_shape[0].block_size"
    body = "/pallas_call:k#0/sub0/broadcast_in_dim:b#0/shape[0]"

    def at(m, bm):
        return (numbers.Size((("M", m),), "float32"),
                numbers.Numbers({frame: bm, body: bm}, (), frozenset({body})))
    graded = [at(256, 128), at(384, 128), at(512, 128)]
    assert numbers.departures(at(8192, 512), graded) == []
    odd = numbers.Numbers({frame: 512, body: 7}, (), frozenset({body}))
    assert [d.slot for d in numbers.departures((numbers.Size((("M", 8192),), "float32"), odd), graded)] == [body]


def test_a_departure_is_said_with_its_values_at_the_graded_sizes():
    # The ninth read's correct dma_scale: a wait's slot (nchunks - 2) % 2 is 1 and 0 at the
    # graded sizes and 0 at the speed size; the student sees both, not a bare "is 0".
    from autograder.grading.judge.faces import _said
    d = numbers.Departure("slot", 0, "a number of dma_wait in the kernel body", (1, 0))
    assert _said([d]) == "a number of dma_wait in the kernel body is 0 here (1 and 0 at the graded sizes)"
