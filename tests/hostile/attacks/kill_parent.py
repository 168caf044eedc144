"""Kills the grader: SIGKILL to the parent process and its process group."""
import os
import signal

from attack_kit import attempt
from honest_add import honest_add as add  # noqa: F401

attempt("kill parent", os.kill, os.getppid(), signal.SIGKILL)
attempt("kill parent group", os.killpg, os.getpgid(os.getppid()), signal.SIGKILL)
attempt("kill everyone", os.kill, -1, signal.SIGKILL)
