"""What the TA site's near-duplicate pairs cost on a class of N submissions.

    python benchmarks/near_duplicates_bench.py [-n 1000] [--threshold 0.8] [--out DIR]

The class is synthetic but made of real programs: the eight matmul designs of
tests/lookalikes/matmul and their disguised copies (renamed, reordered, padded,
re-blocked) are traced in this process as the tracer child traces a submission;
each of the N submissions takes one of them, and about half get one or two
operations changed (an add made a sub, a mul a max...), so the class holds
identical programs, near ones and unrelated ones. It measures, for N:

- the likeness of every submission's program (what the site computes from the
  programs each grading kept);
- the pairs with the MinHash index (datasketch) against scoring every pair:
  time, pairs scored, and whether both find the same pairs;
- the whole site written from N stored gradings (index, pages, pairs).
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from autograder.grading.identity import likeness  # noqa: E402
from autograder.review import batch, similar, site  # noqa: E402
from autograder.review.export import Submission, Submitter  # noqa: E402

BINARY = ("add", "sub", "mul", "max", "min", "div", "rem", "pow")      # same arity: any may replace any
COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")


def traced_programs(folder: Path) -> list[str]:
    """The checked program documents (JSON text) of every design and its copies."""
    from lookalikes.variants import variant
    from test_near_duplicates import COPIES, DESIGNS, _trace

    from autograder.pallas_surface.rungs import hooks
    hooks.install()
    docs = []
    for design in DESIGNS:
        docs.append(json.dumps(_trace(design)))
        for name, steps in COPIES.items():
            path = folder / f"{design.stem}__{name}.py"
            path.write_text(variant(design.read_text(), *steps, salt=name))
            docs.append(json.dumps(_trace(path)))
    return docs


def mutated(text: str, rng: random.Random) -> str:
    """One to three operations of the program changed (a near, not an identical, program)."""
    doc = json.loads(text)
    eqns = []

    def walk(v):
        if isinstance(v, dict):
            if "p" in v and "in" in v and v["p"] in BINARY + COMPARE:
                eqns.append(v)
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
    walk(doc)
    for e in rng.sample(eqns, min(len(eqns), rng.choice((1, 2, 3)))):
        e["p"] = rng.choice(BINARY if e["p"] in BINARY else COMPARE)
    return json.dumps(doc)


def make_class(docs: list[str], n: int, rng: random.Random) -> list[str]:
    return [mutated(d, rng) if rng.random() < 0.8 else d for d in (rng.choice(docs) for _ in range(n))]


def timed(fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=1000)
    ap.add_argument("--threshold", type=float, default=similar.DEFAULT_THRESHOLD)
    ap.add_argument("--out", type=Path, help="write the site here (default: a temporary folder)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="near-bench-"))
    docs, t_trace = timed(traced_programs, work)
    print(f"traced {len(docs)} programs (8 designs and their copies) in {t_trace:.1f} s")
    texts = make_class(docs, args.n, random.Random(23))
    import datasketch  # noqa: F401  (its import, scipy's included, is a second: not the index's cost)
    likes, t_like = timed(lambda: {f"s{i}": likeness.of(json.loads(t)) for i, t in enumerate(texts)})
    print(f"likeness of {args.n} programs: {t_like:.2f} s ({1000 * t_like / args.n:.1f} ms each)")
    indexed, t_index = timed(similar.find, likes, args.threshold)
    exact, t_exact = timed(similar.find, likes, args.threshold, exact=True)
    distinct = len(indexed.programs)
    print(f"{distinct} distinct programs; {len(indexed.submission_pairs())} submission pairs at or above "
          f"{args.threshold} ({len(indexed.pairs)} between different programs)")
    print(f"index: {t_index:.2f} s, {indexed.scored} pairs scored; every pair: {t_exact:.2f} s, "
          f"{exact.scored} pairs scored; same pairs found: {indexed.submission_pairs() == exact.submission_pairs()}")
    out = args.out or work / "site"
    rows = [site.row(Submission(sid, work, (Submitter(f"Student {sid}", f"{sid}@x.edu", sid),)),
                     batch.Graded(f"k{sid}", sid, "graded", 1.0, {"score": 1.0, "tests": [], "extra_data": {}},
                                  programs={"check:f32": text}))
            for sid, text in zip(likes, texts)]
    written, t_site = timed(site.write, rows, out, "matmul (synthetic)", "matmul", args.threshold)
    print(f"site of {args.n} submissions ({len(written)} files, pairs included) written in {t_site:.1f} s: {out}")


if __name__ == "__main__":
    main()
