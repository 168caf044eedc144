"""Prints 120 MB at import, hoping to exhaust the grader's memory or disk or
blow past Gradescope's output limit."""
import os
import sys

from honest_add import honest_add as add  # noqa: F401

block = (b"flood " * 170 + b"\n") * 64          # 64 KB per write
for _ in range(120 * 1024 * 1024 // len(block)):
    os.write(1, block)
sys.stdout.write("END OF FLOOD\n")
