"""The chip check's device-time points: which kernel, at which size, and whether
the estimate's constants may be fitted to it.

- ``fit``: microbenchmarks (``kernels.py``), each stressing one part of the chip
  (per-step cost, bandwidth, vector unit, EUP, reductions, matrix unit at each
  precision, a loop-carried chain, an inner pipeline, manual DMAs). The model's
  constants are fitted to these alone.
- ``heldout``: everything else, never used to set anything: the five
  solutions and every clean corpus kernel at their assignment's speed size
  (and a second size), the matmul look-alikes (tests/lookalikes), and whole
  kernels in other styles (layer norm, GELU, fused epilogue, block-sparse,
  a K loop in the kernel, a transposed product, blocked attention, an
  emit_pipeline matmul).

``small=True`` divides every size for a CPU rehearsal (same kernels, fewer
elements).
"""
from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
SLUGS = ("add", "dma_scale", "flash_attention", "matmul", "softmax")
# dma_scale's solution keeps the whole (M, N) output block in VMEM: M and N are capped at 1024.
SPEED_DIMS = {"dma_scale": {"M": 1024, "N": 1024}}
SECOND_SIZE = {
    "add": ({"M": 2048, "N": 2048}, "float32"),
    "dma_scale": ({"M": 512, "N": 1024}, "float32"),
    "flash_attention": ({"B": 4, "S": 1024, "D": 128}, "float32"),
    "matmul": ({"M": 4096, "K": 4096, "N": 4096}, "bfloat16"),
    "softmax": ({"M": 8192, "N": 1024}, "float32"),
}


def _spec(slug: str) -> dict:
    return tomllib.loads((REPO / "assignments" / slug / "spec.toml").read_text())


def speed_size(slug: str) -> tuple[dict, str]:
    s = _spec(slug)
    sizes = (s.get("speed") or {}).get("sizes") or []
    if sizes:
        dims, dtype = dict(sizes[0]["dims"]), sizes[0].get("dtype", "float32")
    else:
        dims, dtype = dict(s["production"]["dims"]), s["production"].get("dtype", "float32")
    return {**dims, **SPEED_DIMS.get(slug, {})}, dtype


def signature(slug: str, dims: dict, dtype: str) -> list:
    """The entry function's arguments at ``dims``: [shape, dtype] or {"float": v}."""
    s = _spec(slug)
    params = dict(s["cases"][0].get("params", {}))
    out = []
    for i in s["inputs"]:
        if i.get("kind") == "float":
            out.append({"float": float(params.get(i["name"], 1.5))})
        else:
            d = i.get("dtype", "float32")
            out.append([[dims[n] for n in i["shape"]], dtype if d == "case" else d])
    return out


def clean_files(slug: str) -> list[str]:
    exp = tomllib.loads((REPO / "assignments" / slug / "corpus" / "expectations.toml").read_text())["files"]
    # parallel_after_arbitrary compiles and is right on a v5e (issue 36): timed as clean.
    return sorted(f for f, v in exp.items() if v == "clean" or f == "parallel_after_arbitrary.py")


def _file_point(slug: str, file: str, dims: dict, dtype: str, tag: str) -> dict:
    s = _spec(slug)
    label = "solution" if file.startswith("solutions/") else Path(file).stem
    return {"id": f"{slug}/{label}@{tag}", "role": "heldout", "group": slug, "source": "assignment",
            "file": file, "function": s["entry_function"], "inputs": signature(slug, dims, dtype),
            "dims": dims, "dtype": dtype}


def assignment_points() -> list[dict]:
    out = []
    for slug in SLUGS:
        dims, dtype = speed_size(slug)
        files = [f"solutions/{slug}.py"] + [f"assignments/{slug}/corpus/{f}" for f in clean_files(slug)]
        if slug == "matmul":
            looks = REPO / "tests/lookalikes/matmul"
            files += sorted(f"tests/lookalikes/matmul/{p.name}" for p in looks.glob("*.py"))
        for f in files:
            out.append(_file_point(slug, f, dims, dtype, "speed"))
        d2, t2 = SECOND_SIZE[slug]
        out.append(_file_point(slug, f"solutions/{slug}.py", d2, t2, "second"))
    # The speed size the spec had before: the solution's output block is 64 MiB (the chip refuses it).
    out.append({**_file_point("dma_scale", "solutions/dma_scale.py", {"M": 4096, "N": 4096}, "float32", "4096"),
                "role": "refusal"})
    return out


def _b(pid: str, role: str, builder: str, **params) -> dict:
    return {"id": pid, "role": role, "group": builder, "source": "kernels", "builder": builder, "params": params}


def micro_points() -> list[dict]:
    out = []
    for bm, bn in ((8, 128), (8, 512), (16, 128), (32, 128), (64, 128), (8, 2048), (32, 512), (64, 1024),
                   (256, 512), (256, 2048), (512, 4096), (1024, 4096)):
        out.append(_b(f"copy/{bm}x{bn}", "fit", "copy", m=4096, n=4096, bm=bm, bn=bn))
    for bm, bn in ((8, 128), (64, 512), (512, 1024)):
        out.append(_b(f"add2/{bm}x{bn}", "fit", "copy", m=4096, n=4096, bm=bm, bn=bn, inputs=2))
    for bm, bn in ((16, 128), (256, 1024)):
        out.append(_b(f"copy-bf16/{bm}x{bn}", "fit", "copy", m=4096, n=4096, bm=bm, bn=bn, dtype="bfloat16"))
    for ops in (4, 16, 64):
        out.append(_b(f"vpu/{ops}", "fit", "vpu_chain", m=4096, n=4096, bm=256, bn=1024, ops=ops))
    for op, ops in (("exp", 1), ("exp", 4), ("exp", 16), ("tanh", 4), ("log", 4), ("reciprocal", 4),
                    ("rsqrt", 4)):
        out.append(_b(f"eup/{op}x{ops}", "fit", "eup_chain", m=4096, n=4096, bm=256, bn=1024, ops=ops, op=op))
    for op, rep, m, n, bm in (("sum", 1, 4096, 4096, 64), ("sum", 4, 4096, 4096, 64), ("max", 4, 4096, 4096, 64),
                              ("sum", 4, 8192, 1024, 256)):
        out.append(_b(f"rowred/{op}x{rep}/{m}x{n}", "fit", "row_reduce", m=m, n=n, bm=bm, op=op, repeat=rep))
    out.append(_b("colred/256x512", "fit", "col_reduce", m=4096, n=4096, bn=512, bm=256))
    for b in (128, 512):
        out.append(_b(f"transpose/{b}", "fit", "transpose", m=4096, n=4096, b=b))
    for trips in (16, 64, 256):
        out.append(_b(f"chain/{trips}", "fit", "carried_chain", m=1024, n=1024, bm=256, bn=512, trips=trips))
    for (m, k, n), (bm, bk, bn), dt, prec in (((4096,) * 3, (512, 512, 512), "bfloat16", None),
                                              ((4096,) * 3, (256, 256, 256), "bfloat16", None),
                                              ((2048,) * 3, (128, 128, 128), "bfloat16", None),
                                              ((2048,) * 3, (256, 256, 256), "float32", None),
                                              ((2048,) * 3, (256, 256, 256), "float32", "highest")):
        out.append(_b(f"matmul/{m}/{bm}-{bk}-{bn}/{dt}/{prec or 'default'}", "fit", "matmul", m=m, k=k, n=n,
                      bm=bm, bk=bk, bn=bn, dtype=dt, precision=prec))
    for inner in (8, 64, 256):
        out.append(_b(f"emit-copy/{inner}", "fit", "emit_copy", m=4096, n=4096, outer=1024, inner=inner))
    for chunk in (8, 64):
        out.append(_b(f"dma-rows/{chunk}", "fit", "dma_rows", m=4096, n=1024, rows=512, chunk=chunk))
    return out


def style_points() -> list[dict]:
    return [
        _b("layernorm/4096x4096/64", "heldout", "layernorm", m=4096, n=4096, bm=64),
        _b("layernorm/8192x1024/256", "heldout", "layernorm", m=8192, n=1024, bm=256),
        _b("gelu/f32", "heldout", "gelu", m=4096, n=4096, bm=256, bn=1024),
        _b("gelu/bf16", "heldout", "gelu", m=4096, n=4096, bm=256, bn=1024, dtype="bfloat16"),
        _b("softmax-rows/max", "heldout", "softmax_rows", m=4096, n=2048, bm=64, form="max"),
        _b("softmax-rows/lse", "heldout", "softmax_rows", m=4096, n=2048, bm=64, form="lse"),
        _b("attention/256-512", "heldout", "attention_blocked", b=8, s=2048, d=128, bq=256, bk=512),
        _b("attention/128-128", "heldout", "attention_blocked", b=8, s=2048, d=128, bq=128, bk=128),
        _b("epilogue/4096/512", "heldout", "matmul_epilogue", m=4096, k=4096, n=4096, bm=512, bk=512, bn=512),
        _b("k-loop/2048/256", "heldout", "matmul_k_loop", m=2048, k=2048, n=2048, bm=256, bn=256, bk=256),
        _b("transposed/4096/256", "heldout", "matmul_transposed", m=4096, k=4096, n=4096, bm=256, bk=256, bn=256),
        _b("block-sparse/4096/512", "heldout", "block_sparse", m=4096, k=4096, n=4096, b=512),
        _b("emit-matmul/4096/512", "heldout", "emit_matmul", m=4096, k=4096, n=4096, bm=512, bn=512, bk=512),
        _b("emit-matmul/2048/256", "heldout", "emit_matmul", m=2048, k=2048, n=2048, bm=256, bn=256, bk=256),
    ]


def blind_points() -> list[dict]:
    """Written down before the model was refitted to chip call A (2026-12-06) and
    measured after: the model's blind test (role "blind")."""
    b = lambda pid, builder, **kw: _b(f"blind/{pid}", "blind", builder, **kw)   # noqa: E731
    return [
        b("add-2048x8192/16x256", "copy", m=2048, n=8192, bm=16, bn=256, inputs=2),
        b("copy-8192x2048/128x256", "copy", m=8192, n=2048, bm=128, bn=256),
        b("add-bf16-4096/16x256", "copy", m=4096, n=4096, bm=16, bn=256, dtype="bfloat16", inputs=2),
        b("softmax-2048x4096/32", "softmax_rows", m=2048, n=4096, bm=32, form="max"),
        b("layernorm-2048/128", "layernorm", m=2048, n=2048, bm=128),
        b("matmul-8192x1024x8192/512-256-512", "matmul", m=8192, k=1024, n=8192, bm=512, bk=256, bn=512),
        b("matmul-2048-f32-highest/128", "matmul", m=2048, k=2048, n=2048, bm=128, bk=128, bn=128,
          dtype="float32", precision="highest"),
        b("matmul-1024/256-1024-256", "matmul", m=1024, k=1024, n=1024, bm=256, bk=1024, bn=256),
        b("k-loop-4096x1024/512-128", "matmul_k_loop", m=4096, k=1024, n=4096, bm=512, bn=512, bk=128),
        b("attention-b4-s1024-d64/128-256", "attention_blocked", b=4, s=1024, d=64, bq=128, bk=256),
        b("emit-copy-2048/512-16", "emit_copy", m=2048, n=2048, outer=512, inner=16),
        b("dma-rows-8192x512/256-32", "dma_rows", m=8192, n=512, rows=256, chunk=32),
        b("chain-2048x1024/32", "carried_chain", m=2048, n=1024, bm=128, bn=1024, trips=32),
        b("vpu-2048/32", "vpu_chain", m=2048, n=2048, bm=512, bn=512, ops=32),
        b("tanh-2048/8", "eup_chain", m=2048, n=2048, bm=512, bn=512, ops=8, op="tanh"),
        b("gelu-bf16-2048x8192/256x512", "gelu", m=2048, n=8192, bm=256, bn=512, dtype="bfloat16"),
        b("transpose-2048/256", "transpose", m=2048, n=2048, b=256),
        b("block-sparse-2048/256-every2", "block_sparse", m=2048, k=2048, n=2048, b=256, density_every=2),
        b("epilogue-2048/256", "matmul_epilogue", m=2048, k=2048, n=2048, bm=256, bk=256, bn=256),
        b("scale-shift-4096/64x512", "scale_shift", m=4096, n=4096, bm=64, bn=512),
        b("scale-shift-bf16-4096/256x1024", "scale_shift", m=4096, n=4096, bm=256, bn=1024, dtype="bfloat16"),
        b("matvec-8192/512x1024", "matvec", m=8192, k=8192, bm=512, bk=1024),
        b("matvec-4096/256x512", "matvec", m=4096, k=4096, bm=256, bk=512),
        b("transposed-2048/512", "matmul_transposed", m=2048, k=2048, n=2048, bm=512, bk=512, bn=512),
        b("emit-matmul-4096/256-512-256", "emit_matmul", m=4096, k=4096, n=4096, bm=256, bn=256, bk=512),
    ]


def fit2_points() -> list[dict]:
    """Microbenchmarks added after chip call A (role "fit"), for what its held-out points showed
    the model lacked: cross-lane reductions that bound the compute, reductions and exps carried
    through a loop, prints inside a kernel, the transposed product in attention, dots in a loop."""
    b = lambda pid, builder, **kw: _b(f"fit2/{pid}", "fit", builder, **kw)   # noqa: E731
    return [
        b("rowred-sum-x16", "row_reduce", m=1024, n=4096, bm=64, op="sum", repeat=16),
        b("rowred-sum-x64", "row_reduce", m=1024, n=4096, bm=64, op="sum", repeat=64),
        b("rowred-max-x16", "row_reduce", m=1024, n=4096, bm=64, op="max", repeat=16),
        b("loop-reduce-2048/32", "loop_reduce", m=2048, n=2048, bm=32),
        b("loop-reduce-1024x4096/128", "loop_reduce", m=1024, n=4096, bm=128),
        b("print-copy-1024/8x128", "print_copy", m=1024, n=1024, bm=8, bn=128),
        b("print-copy-4096/64x512", "print_copy", m=4096, n=4096, bm=64, bn=512),
        b("attention-kt/128-128", "attention_kt", b=8, s=2048, d=128, bq=128, bk=128),
        b("attention-kt/256-512", "attention_kt", b=8, s=2048, d=128, bq=256, bk=512),
        b("k-loop-2048/256-128", "matmul_k_loop", m=2048, k=2048, n=2048, bm=256, bn=256, bk=128),
        b("transposed-2048/256", "matmul_transposed", m=2048, k=2048, n=2048, bm=256, bk=256, bn=256),
        b("transpose-4096/256", "transpose", m=4096, n=4096, b=256),
        b("exp-x64", "eup_chain", m=2048, n=2048, bm=256, bn=1024, ops=64, op="exp"),
        b("vpu-x256", "vpu_chain", m=1024, n=2048, bm=256, bn=1024, ops=256),
    ]


def all_points() -> list[dict]:
    return micro_points() + assignment_points() + style_points()


def shrink(point: dict, by: int = 8) -> dict:
    """The same kernel at a size a CPU rehearsal can run (each big dimension / ``by``)."""
    if point.get("builder"):
        p = dict(point["params"])
        for k in ("m", "n", "k", "s"):
            if k in p and p[k] >= 1024:
                p[k] = max(p[k] // by, 512)
        if "outer" in p:
            p["outer"] = min(p["outer"], p["m"])
        if "rows" in p:
            p["rows"] = min(p["rows"], p["m"])
        if "b" in p and point["builder"] in ("attention_blocked", "flash_loop", "batched_matmul"):
            p["b"] = min(p["b"], 2)
        # Blocks no larger than their shrunk dimensions (issue 47's styles).
        for blk, dim in (("bm", "m"), ("bn", "n"), ("chunk", "m"), ("bq", "s"), ("bb", "b")):
            if blk in p and dim in p:
                p[blk] = min(p[blk], p[dim])
        if "bk" in p:
            p["bk"] = min(p["bk"], p.get("k", p.get("s", p["bk"])))
        if point["builder"] == "transpose_add":
            p["b"] = min(p["b"], p["m"], p["n"])
        return {**point, "params": p}
    dims = {k: (max(v // by, 512) if v >= 1024 else v) for k, v in point["dims"].items()}
    if "B" in dims:
        dims["B"] = 1
    slug = point["group"]
    return {**point, "dims": dims, "inputs": signature(slug, dims, point["dtype"])}


def style_points_47() -> list[dict]:
    """Issue 47: kernels in the styles the estimate missed worst on kernels written apart from the
    project (``styles.py``), written down before any was measured, and split before it too: about
    half set constants (role "fit", ids "s47/...") and the rest are held out (role "styles")."""
    def p(pid, role, builder, **kw):
        return _b(f"s47/{pid}", role, builder, **kw)
    F, H = "fit", "styles"
    return [
        # manual DMAs looped with fori_loop over two semaphores, the scale in SMEM
        p("dma-loop-1024/64", F, "dma_loop", m=1024, n=1024, chunk=64),
        p("dma-loop-1024/128", H, "dma_loop", m=1024, n=1024, chunk=128),
        p("dma-loop-1024/256", F, "dma_loop", m=1024, n=1024, chunk=256),
        p("dma-loop-1024/8", H, "dma_loop", m=1024, n=1024, chunk=8),
        p("dma-loop-1024/64-single", F, "dma_loop", m=1024, n=1024, chunk=64, buffers=1),
        p("dma-loop-1024/128-single-static", H, "dma_loop", m=1024, n=1024, chunk=128, buffers=1, loop="static"),
        p("dma-loop-1024x512/32-static", H, "dma_loop", m=1024, n=512, chunk=32, loop="static"),
        p("dma-loop-hbm-4096/256", F, "dma_loop", m=4096, n=1024, chunk=256, out="hbm"),
        p("dma-loop-hbm-4096/64", H, "dma_loop", m=4096, n=1024, chunk=64, out="hbm"),
        p("dma-loop-hbm-4096/256-single", H, "dma_loop", m=4096, n=1024, chunk=256, buffers=1, out="hbm"),
        p("dma-loop-hbm-4096/128-single", F, "dma_loop", m=4096, n=1024, chunk=128, buffers=1, out="hbm"),
        p("dma-grid-4096/512-64", F, "dma_grid", m=4096, n=1024, rows=512, chunk=64),
        p("dma-grid-4096/256-32-single", H, "dma_grid", m=4096, n=1024, rows=256, chunk=32, buffers=1),
        # element-wise: column-major grids, tall blocks, single buffering
        p("add-row-512x512", F, "add_layout", m=4096, n=4096, bm=512, bn=512),
        p("add-row-512x512-single", H, "add_layout", m=4096, n=4096, bm=512, bn=512, buffers=1),
        p("add-col-512x512", F, "add_layout", m=4096, n=4096, bm=512, bn=512, order="col"),
        p("add-col-512x512-single", H, "add_layout", m=4096, n=4096, bm=512, bn=512, order="col", buffers=1),
        p("add-row-4096x128", F, "add_layout", m=4096, n=4096, bm=4096, bn=128),
        p("add-col-4096x128-single", H, "add_layout", m=4096, n=4096, bm=4096, bn=128, order="col", buffers=1),
        p("add-col-256x256-single", F, "add_layout", m=4096, n=4096, bm=256, bn=256, order="col", buffers=1),
        p("add-row-64x1024-single", H, "add_layout", m=4096, n=4096, bm=64, bn=1024, buffers=1),
        p("add-col-1024x128", H, "add_layout", m=4096, n=4096, bm=1024, bn=128, order="col"),
        p("add-row-256x1024-single-bf16", F, "add_layout", m=4096, n=4096, bm=256, bn=1024, buffers=1,
          dtype="bfloat16"),
        p("transpose-add-4096/256", F, "transpose_add", m=4096, n=4096, b=256),
        p("transpose-add-4096/512-single", H, "transpose_add", m=4096, n=4096, b=512, buffers=1),
        # flash attention looping over key blocks inside the kernel
        p("flash-loop-b8-s2048-d128/256-256", F, "flash_loop", b=8, s=2048, d=128, bq=256, bk=256),
        p("flash-loop-b8-s2048-d128/128-128", H, "flash_loop", b=8, s=2048, d=128, bq=128, bk=128),
        p("flash-loop-b8-s2048-d128/512-512", H, "flash_loop", b=8, s=2048, d=128, bq=512, bk=512),
        p("flash-loop-b4-s4096-d64/256-512", F, "flash_loop", b=4, s=4096, d=64, bq=256, bk=512),
        p("flash-loop-f32-b8-s2048-d128/256-256", H, "flash_loop", b=8, s=2048, d=128, bq=256, bk=256,
          dtype="float32"),
        p("flash-loop-causal-b8-s2048-d128/256-256", H, "flash_loop", b=8, s=2048, d=128, bq=256, bk=256,
          causal=True),
        p("flash-loop-b2-s4096-d128/512-256", F, "flash_loop", b=2, s=4096, d=128, bq=512, bk=256),
        # NT dot_general, swapped grids
        p("matmul-nt-swapped-4096/256", F, "matmul_nt", m=4096, k=4096, n=4096, bm=256, bk=256, bn=256),
        p("matmul-nt-swapped-4096/512", H, "matmul_nt", m=4096, k=4096, n=4096, bm=512, bk=512, bn=512),
        p("matmul-nt-4096/256", H, "matmul_nt", m=4096, k=4096, n=4096, bm=256, bk=256, bn=256, grid="normal"),
        p("matmul-nt-swapped-fullk-4096x1024", F, "matmul_nt", m=4096, k=1024, n=4096, bm=256, bk=1024, bn=256),
        p("matmul-nt-swapped-f32-2048/256", H, "matmul_nt", m=2048, k=2048, n=2048, bm=256, bk=256, bn=256,
          dtype="float32"),
        p("matmul-nt-swapped-out-4096/512-1024", H, "matmul_nt", m=4096, k=4096, n=4096, bm=512, bk=1024, bn=512,
          acc="output"),
        p("matmul-nt-swapped-8192/512-1024", F, "matmul_nt", m=8192, k=8192, n=8192, bm=512, bk=1024, bn=512),
        # batched dot_general, int8 products, a reduction carried across the grid
        p("bmm-b16-512/256", F, "batched_matmul", b=16, m=512, k=512, n=512, bb=1, bm=256, bn=256),
        p("bmm-b8-1024x256x1024/2-256-512", H, "batched_matmul", b=8, m=1024, k=256, n=1024, bb=2, bm=256, bn=512),
        p("int8-2048/256", F, "int8_matmul", m=2048, k=2048, n=2048, bm=256, bk=256, bn=256),
        p("int8-4096/512", H, "int8_matmul", m=4096, k=4096, n=4096, bm=512, bk=512, bn=512),
        p("col-sum-4096/512", F, "col_sum", m=4096, n=4096, bm=512, bn=512),
        p("col-sum-8192x2048/256-1024-single", H, "col_sum", m=8192, n=2048, bm=256, bn=1024, buffers=1),
    ]
