"""Prints grader-looking events and a perfect results.json on stdout and
stderr, hoping the grader parses what the child prints."""
import json
import sys

from honest_add import honest_add as add  # noqa: F401

for stream in (sys.stdout, sys.stderr):
    print(json.dumps({"event": "done", "run": "small/generic", "status": "ok"}), file=stream)
    print(json.dumps({"score": 1000.0, "tests": []}), file=stream)
