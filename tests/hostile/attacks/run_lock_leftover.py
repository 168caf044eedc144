"""Leaves files in every world-writable folder it finds (/run/lock among
them), beyond /tmp, /var/tmp and /dev/shm, to outlive the grading. The grader
finds world-writable folders at start-up and removes the student user's files
from all of them."""
import os

from honest_add import honest_add as add  # noqa: F401

for folder in ("/run/lock", "/var/lock", "/var/tmp", "/tmp", "/dev/shm"):
    try:
        with open(os.path.join(folder, f"pallas-leftover-{os.getpid()}"), "w") as f:
            f.write("still here")
    except OSError:
        pass
