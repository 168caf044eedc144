"""Writes a perfect results.json into the grader's results folder at import."""
import json
import os

from attack_kit import attempt, grader_root
from honest_add import honest_add as add  # noqa: F401

path = os.path.join(grader_root(), "results", "results.json")
attempt("write results.json", lambda: open(path, "w").write(json.dumps({"score": 1000.0, "tests": []})))
attempt("write extra results file", lambda: open(path + ".extra", "w").write("x"))
