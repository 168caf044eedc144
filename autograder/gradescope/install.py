"""What ``setup.sh`` checks once the grader is installed, as root: the student
user exists, can reach the venv, and can start the grader's child (``python -m
autograder.gradescope.install``)."""
from __future__ import annotations

import dataclasses
import subprocess
import sys

from ..children import GRADER
from ..isolation.confinement import (
    SLOT_UID_BASE,
    SLOTS,
    make_reachable,
    popen_kwargs,
    python_command,
    student_identity,
)


def main() -> int:
    """Exit 0 when student code can run confined here (or this is not root)."""
    identity = student_identity()
    if not identity.dropped:
        print("confinement: not root; student code will run as the grader's own user")
        return 0
    for p in make_reachable(identity):
        print(f"confinement: made {p} traversable (o+x) for {identity.name}")
    # Checked as a uid no grading slot uses (gradings running now kill every
    # process of their slot's uid); what it may reach goes by the same "other"
    # permissions as the student user's.
    checker = dataclasses.replace(identity, uid=SLOT_UID_BASE + SLOTS + 1, name="check")
    probe = subprocess.run(python_command(GRADER, "--check"),
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd="/",
                           timeout=120, **popen_kwargs(checker))
    if probe.returncode != 0:
        print(f"confinement: {identity.name} cannot import the grader: {probe.stderr[-500:]}")
        return 1
    print(f"confinement: student code will run as {identity.name} (uid {identity.uid})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
