"""Tries to read the instructor's custom checks (and their expected values):
from the assignment source, and, through a detached daemon, from the grader's
working folders once the checks are copied there to run; prints what it finds
(the trace phase's prints are shown) and drops it into the results folder."""
import glob
import os
import time

from attack_kit import attempt, grader_root
from honest_add import honest_add as add  # noqa: F401

root = grader_root()


def read_all(pattern):
    return [open(p).read() for p in glob.glob(pattern, recursive=True)]


attempt("read source checks", read_all, os.path.join(root, "source", "**", "checks.py"))
attempt("read working checks", read_all, "/tmp/pallas-grade-*/in/checks/*.py")
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for _ in range(120):
            found = sum((read_all(p) for p in ("/tmp/pallas-grade-*/in/checks/*.py",
                                                "/tmp/**/checks.py")), [])
            if found:
                with open(os.path.join(root, "results", "checks.txt"), "w") as f:
                    f.write("\n".join(found))
            time.sleep(0.25)
        os._exit(0)
    os._exit(0)
