"""Regenerate the program documents the fuzzer mutates (tests/test_document_fuzz.py):
real kernels traced once, each at one case of its assignment, as the tracer writes
them (checked by the schema). Run from the repository root with the default JAX:

    .venv/bin/python tests/documents/make.py
"""
import importlib.util
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

# (assignment, kernel file, case index or "production"): solutions, and corpus kernels
# that reach other parts of the grammar (manual DMA and semaphores, pl.kernel's
# mpmd_map, scalar prefetch, emit_pipeline, fori_loop, a reshape outside the kernel).
KERNELS = (
    ("add", "solutions/add.py", 0),
    ("matmul", "solutions/matmul.py", "production"),
    ("softmax", "solutions/softmax.py", 0),
    ("flash_attention", "solutions/flash_attention.py", 0),
    ("dma_scale", "solutions/dma_scale.py", 0),
    ("dma_scale", "assignments/dma_scale/corpus/kernel_two_cores.py", 0),
    ("dma_scale", "assignments/dma_scale/corpus/dma_wrong_semaphore.py", 0),     # a wait on another semaphore
    ("dma_scale", "assignments/dma_scale/corpus/fori_wait_on_next_slot_semaphore.py", 0),   # the same in a loop
    ("add", "assignments/add/corpus/scalar_prefetch_order.py", 0),
    ("matmul", "assignments/matmul/corpus/emit_pipeline_k.py", 0),
    ("add", "assignments/add/corpus/fori_loop_rows.py", 0),
    ("add", "assignments/add/corpus/glue_outside_kernels.py", 0),
)


def document(slug: str, path: Path, which) -> dict:
    import jax
    import jax.numpy as jnp

    from autograder.grading import assignments
    from autograder.grading.run import plan as planning
    from autograder.pallas_surface.program import schema, serial
    from autograder.pallas_surface.rungs import hooks, rung
    hooks.install()
    a = assignments.find(slug)
    case = planning._production_case(a) if which == "production" else a.cases[which]
    module_spec = importlib.util.spec_from_file_location(f"doc_{path.stem}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    args, static = [], []
    for i, inp in enumerate(a.inputs):
        if inp.kind == "float":
            args.append(float(dict(case.params)[inp.name]))
            static.append(i)
        else:
            args.append(jax.ShapeDtypeStruct(tuple(a.shape(inp.shape, case)), jnp.dtype(a.dtype_of(inp.dtype, case))))
    traced = rung.trace(getattr(module, a.entry_function), args, static)
    return schema.loads(json.dumps(serial.encode(traced, {str(path.resolve())})).encode())


if __name__ == "__main__":
    out = Path(__file__).resolve().parent
    for slug, file, which in KERNELS:
        path = REPO / file
        doc = document(slug, path, which)
        name = f"{slug}-{path.stem}.json"
        (out / name).write_text(json.dumps(doc, separators=(",", ":")) + "\n")
        print(name, len(json.dumps(doc)))
