"""What attacks share (staged beside each attack): where the grader lives."""
import os


def grader_root() -> str:
    """The grader's command line is world-readable: ``... gradescope --root R``."""
    try:
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
            args = f.read().split(b"\0")
        if b"--root" in args:
            return args[args.index(b"--root") + 1].decode()
    except (OSError, IndexError, ValueError):
        pass
    return "/autograder"


def attempt(what, fn, *args):
    """Run one hostile step; print what happened (the output is data to the grader)."""
    try:
        result = fn(*args)
        print(f"ATTACK {what}: succeeded {str(result)[:200]!r}")
        return result
    except BaseException as e:  # noqa: BLE001
        print(f"ATTACK {what}: failed ({type(e).__name__})")
        return None
