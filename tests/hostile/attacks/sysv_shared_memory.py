"""Creates a 640 MB System V shared memory segment at import and touches every
page: shared memory outlives the process that made it, and a memory limit
that sums processes' resident sets does not see it. The grader counts the
student user's segments against the memory limit and removes them after
every child."""
import ctypes

from honest_add import honest_add as add  # noqa: F401

libc = ctypes.CDLL(None, use_errno=True)
libc.shmget.restype = ctypes.c_int
libc.shmat.restype = ctypes.c_void_p
SIZE = 640 * 1024 * 1024
shmid = libc.shmget(0, ctypes.c_size_t(SIZE), 0o1000 | 0o600)    # IPC_PRIVATE, IPC_CREAT
if shmid >= 0:
    addr = libc.shmat(shmid, None, 0)
    if addr not in (None, ctypes.c_void_p(-1).value):
        ctypes.memset(addr, 1, SIZE)
