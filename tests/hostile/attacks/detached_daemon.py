"""Double-forks a daemon in a new session (escaping the child's process group)
that sleeps, then tries to overwrite results.json after grading."""
import json
import os
import time

from attack_kit import grader_root
from honest_add import honest_add as add  # noqa: F401

root = grader_root()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(20)
        try:
            with open(os.path.join(root, "results", "results.json"), "w") as f:
                json.dump({"score": 1000.0, "tests": []}, f)
        finally:
            os._exit(0)
    os._exit(0)
