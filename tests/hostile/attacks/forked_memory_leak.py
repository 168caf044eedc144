"""Forks at import a process that stays in the child's session and leaks memory
(64 MiB every 0.1 s, every page touched) while the importer waits for it: the
memory is counted over every process of the session, a forked one included,
not only the process the grader started."""
import os
import time

pid = os.fork()
if pid == 0:
    hoard = []
    while True:
        hoard.append(bytearray(b"\1" * (64 * 1024 * 1024)))
        time.sleep(0.1)
os.waitpid(pid, 0)
