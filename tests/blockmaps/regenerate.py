"""Rewrite the block-map fixtures from real gradings (run from the repository root):

    PYTHONPATH=. .venv/bin/python tests/blockmaps/regenerate.py [NAME...]
    PYTHONPATH=. .venv/bin/python tests/blockmaps/regenerate.py --goldens   # redraw only

Each fixture is one finding's evidence, exactly as the grader recorded it when
grading a corpus kernel with run key 3, and the golden text map drawn from it.
tests/test_blockmaps.py checks that the maps drawn from the evidence still
match the goldens; rerun this when the evidence or the drawing changes on
purpose, and read the diff of the goldens.
"""
import json
import sys
from pathlib import Path

from autograder.feedback import blockmaps
from autograder.grading import assignments, grade

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
# fixture -> (assignment, kernel, finding ID, case, check that made it)
FIXTURES = {
    "out-of-bounds": ("add", "assignments/add/corpus/grid_one_step_too_long.py", "out-of-bounds", "odd-rows",
                      "index-maps"),
    "out-of-bounds-window": ("add", "assignments/add/corpus/grid_one_step_too_long.py", "out-of-bounds", "small",
                             "correctness"),
    "out-of-bounds-dma": ("dma_scale", "assignments/dma_scale/corpus/dma_oob_chunk.py", "out-of-bounds", "f32-192x256",
                          "correctness"),
    "uninitialized-memory": ("add", "assignments/add/corpus/grid_one_row_short.py", "uninitialized-memory", "odd-rows",
                             "index-maps"),
    "uninitialized-memory-fills": ("matmul", "assignments/matmul/corpus/unzeroed_accumulator.py",
                                   "uninitialized-memory", "f32-256x384x256", "poisoning"),
    "padding-dependence": ("softmax", "assignments/softmax/corpus/softmax_global_block_max.py", "padding-dependence",
                           "rows-20x256", "poisoning"),
    "output-block-revisit": ("matmul", "assignments/matmul/corpus/k_axis_outermost.py", "output-block-revisit",
                             "f32-256x384x256", "index-maps"),
    "output-block-revisit-parallel": ("matmul", "assignments/matmul/corpus/k_axis_parallel.py", "output-block-revisit",
                                      "f32-256x384x256", "index-maps"),
    "data-race": ("dma_scale", "assignments/dma_scale/corpus/dma_core_ranges_overlap.py", "data-race", "f32-192x256",
                  "races"),
    "grid-order-dependence": ("matmul", "assignments/matmul/corpus/k_axis_parallel.py", "grid-order-dependence",
                              "f32-256x384x256", "grid-order"),
    "wrong-result": ("softmax", "assignments/softmax/corpus/softmax_wrong_axis.py", "wrong-result", "rows-20x256",
                     "correctness"),
    "numerics": ("add", "assignments/add/corpus/nan_output.py", "numerics", "small", "correctness"),
}


def main(only: list[str]) -> None:
    reports: dict = {}
    for name, (slug, kernel, fid, case, check) in FIXTURES.items():
        if only and name not in only:
            continue
        if (slug, kernel) not in reports:
            reports[slug, kernel] = grade.grade(assignments.find(slug), ROOT / kernel, grade.GradeOptions(run_key=3))
        found = next(f for f in reports[slug, kernel].findings if f.id == fid and f.case == case and f.check == check)
        doc = {"kernel": kernel, "finding": fid, "case": case, "check": check, "facts": found.facts()}
        (HERE / f"{name}.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        (HERE / f"{name}.txt").write_text(blockmaps.text(blockmaps.build(fid, doc["facts"], case)) + "\n",
                                          encoding="utf-8")
        print("wrote", name)


def goldens() -> None:
    """Redraw every golden from its recorded evidence (after a change to the drawing)."""
    for path in sorted(HERE.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        m = blockmaps.build(doc["finding"], doc["facts"], doc["case"])
        path.with_suffix(".txt").write_text(blockmaps.text(m) + "\n", encoding="utf-8")


if __name__ == "__main__":
    goldens() if sys.argv[1:] == ["--goldens"] else main(sys.argv[1:])
